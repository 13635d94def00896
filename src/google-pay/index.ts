/** Google Pay for a gateway: ECv2 tokens verified and decrypted, test-mode tokens, Coffer's keys and settings. */
export { createGooglePayDecryptor, type GooglePayDecryptor, type GooglePayDecryptorDeps } from './decryptor.ts';
export { DecryptPool, type DecryptPoolOptions, decryptionUnavailable, defaultDecryptThreads } from './decrypt-pool.ts';
export { decryptEcv2, type DecryptOptions } from './ecv2.ts';
export { GooglePayError, type GooglePayErrorCode, googlePayApiError, TOKEN_FIELD } from './errors.ts';
export { generateRecipientKeyPair, parsePrivateKeys, type RecipientKeyPair, recipientPublicKey } from './keys.ts';
export { assertGatewayMerchant, type GooglePayAuthMethod, type GooglePayCardDetails, type GooglePayPayment } from './payload.ts';
export {
  fileRootKeyLoader, parseRootKeys, type RootKey, type RootKeyLoader, RootKeySource, type RootKeySourceOptions, urlRootKeyLoader, usableRootKeys,
} from './root-keys.ts';
export { GOOGLE_ROOT_KEYS_URLS, MAX_DECRYPT_THREADS, type GooglePayEnvironment, type GooglePaySettings, readGooglePaySettings, type RootKeysLocation } from './settings.ts';
export { decodeTestToken, isTestToken, TEST_PROTOCOL_VERSION } from './test-mode.ts';
