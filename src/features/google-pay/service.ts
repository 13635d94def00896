import type { Principal } from '../../access/principal.ts';
import { assertGatewayMerchant, type GooglePayDecryptor, GooglePayError, googlePayApiError, TOKEN_FIELD } from '../../google-pay/index.ts';
import type { TokenIntentService, TokenIntentView } from '../token-intents/service.ts';

export type GooglePayService = ReturnType<typeof createGooglePayService>;

/**
 * POST /connections/google-pay/tokenize: a Google Pay token, decrypted by Coffer as the
 * gateway (src/google-pay/), becomes a token intent — `card` for PAN_ONLY, `network_token`
 * (with its cryptogram) for CRYPTOGRAM_3DS — that lives like any other (docs/payment-methods.md).
 */
export function createGooglePayService(deps: { decryptor: GooglePayDecryptor; intents: TokenIntentService }) {
  const { decryptor, intents } = deps;
  return {
    /** Stops the decryption threads (on app close). */
    close: () => decryptor.close(),

    async tokenize(principal: Principal, token: unknown): Promise<TokenIntentView> {
      let payment;
      try {
        payment = await decryptor.decrypt(token);
        assertGatewayMerchant(payment, principal.tenantId);
      } catch (err) {
        throw err instanceof GooglePayError ? googlePayApiError(err) : err;
      }
      const { pan, expirationMonth, expirationYear, authMethod, cryptogram, eciIndicator } = payment.details;
      const network = authMethod === 'CRYPTOGRAM_3DS';
      const card = { number: pan, expiration_month: expirationMonth, expiration_year: expirationYear };
      const data = network ? { ...card, cryptogram, ...(eciIndicator ? { eci_indicator: eciIndicator } : {}) } : card;
      // Google's assurance details are not part of the encrypted token: an account Google Pay
      // holds is verified by Google, and a device token's cryptogram is issued only after the
      // cardholder authenticated on the device; a PAN_ONLY card carries no such proof.
      const tspDetails = {
        tsp: 'Google',
        auth_method: authMethod,
        message_id: payment.messageId,
        eci_indicator: eciIndicator ?? '',
        assurance_details: { account_verified: true, card_holder_authenticated: network },
      };
      return intents.create(principal, { type: network ? 'network_token' : 'card', data }, {
        extras: { tsp_details: tspDetails },
        at: `body.${TOKEN_FIELD}.signedMessage`,
      });
    },
  };
}
