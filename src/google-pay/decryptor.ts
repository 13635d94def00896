import type { OutboundClient } from '../outbound/client.ts';
import { DecryptPool } from './decrypt-pool.ts';
import { decryptEcv2, noRecipientKey } from './ecv2.ts';
import { VerifiedIntermediates } from './intermediates.ts';
import { GooglePayError, TOKEN_FIELD } from './errors.ts';
import type { GooglePayPayment } from './payload.ts';
import { fileRootKeyLoader, RootKeySource, urlRootKeyLoader, withoutQuery } from './root-keys.ts';
import type { GooglePaySettings } from './settings.ts';
import { decodeTestToken, TEST_PROTOCOL_VERSION } from './test-mode.ts';
import { ecv2Parts, tokenObject } from './token.ts';

/**
 * What a Google Pay route calls: one object per process, built from the settings, that turns a
 * `google_payment_method_token` into a payment — a real ECv2 token, or a test-mode one when
 * test mode is on. The caller then checks the merchant (assertGatewayMerchant) and stores it.
 */
export type GooglePayDecryptor = {
  /** The payment in `token` (an object or its JSON text); every failure is a GooglePayError (googlePayApiError maps it to a problem). */
  decrypt(token: unknown, now?: number): Promise<GooglePayPayment>;
  /** `gateway:<GOOGLE_PAY_GATEWAY_ID>`. */
  readonly recipientId: string;
  readonly rootKeys: RootKeySource;
  /** The decryption threads (settings.decryptThreads), when there are any and a private key to use. */
  readonly pool: DecryptPool | undefined;
  /** Stops the decryption threads; tokens they held fail with decryption_unavailable, later ones too. */
  close(): Promise<void>;
};

export type GooglePayDecryptorDeps = {
  settings: GooglePaySettings;
  /** The guarded outbound client: Google's keys.json is fetched through it. */
  outbound: Pick<OutboundClient, 'request'>;
  /** Milliseconds since the epoch; default Date.now. */
  clock?: () => number;
  /** Told when a decryption thread fails (a message, never a token or a key). */
  onThreadError?: (message: string) => void;
};

export function createGooglePayDecryptor(deps: GooglePayDecryptorDeps): GooglePayDecryptor {
  const { settings } = deps;
  const clock = deps.clock ?? Date.now;
  const location = settings.rootKeys;
  // Per process: an intermediate key verified under a root key once is not verified again for each token.
  const intermediates = new VerifiedIntermediates();
  const rootKeys = new RootKeySource(
    location.kind === 'file'
      ? { load: fileRootKeyLoader(location.path), source: location.path }
      : { load: urlRootKeyLoader(deps.outbound, location.url), source: withoutQuery(location.url) },
  );

  // The cryptography of real tokens off the event loop; none without a private key (no real token can be read).
  const pool = settings.decryptThreads > 0 && settings.privateKeys.length > 0
    ? new DecryptPool({ size: settings.decryptThreads, privateKeys: settings.privateKeys, recipientId: settings.recipientId, onThreadError: deps.onThreadError })
    : undefined;

  return {
    recipientId: settings.recipientId,
    rootKeys,
    pool,
    close: async () => pool?.close(),
    async decrypt(token, now = clock()) {
      const value = tokenObject(token, TOKEN_FIELD);
      if (value.protocolVersion === TEST_PROTOCOL_VERSION) {
        if (!settings.testMode) {
          throw new GooglePayError('test_mode_disabled', `test-mode tokens (protocolVersion ${TEST_PROTOCOL_VERSION}) are not accepted here: test mode is off`, `${TOKEN_FIELD}.protocolVersion`);
        }
        return decodeTestToken(value, now);
      }
      // The shape first: a malformed token is the caller's to fix, whatever the state of the keys.
      ecv2Parts(value, TOKEN_FIELD);
      // Before fetching root keys that could not help.
      if (settings.privateKeys.length === 0) throw noRecipientKey();
      const roots = await rootKeys.get(now);
      if (pool) return pool.decrypt(value, roots, now);
      return decryptEcv2(value, { rootKeys: roots, privateKeys: settings.privateKeys, recipientId: settings.recipientId, now, intermediates });
    },
  };
}
