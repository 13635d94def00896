import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { problems, WRITE } from '../../http/schemas.ts';
import { presentTokenIntent } from '../token-intents/present.ts';
import { GooglePayTokenizeBody, GooglePayTokenizeResponse } from './schema.ts';
import type { GooglePayService } from './service.ts';

const tags = ['google pay'];

export function registerGooglePayRoutes(app: FastifyInstance, googlePay: GooglePayService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/connections/google-pay/tokenize', {
    config: { access: { permissions: ['token-intent:create'] } },
    schema: {
      tags,
      summary: 'Decrypt a Google Pay (ECv2) payment token into a token intent: card for PAN_ONLY, network_token for CRYPTOGRAM_3DS',
      description: 'Every check that fails answers 400 naming it first in `detail` (malformed_token, unsupported_protocol, bad_intermediate_signature, expired_intermediate_key, bad_message_signature, tag_mismatch, expired_message, malformed_payload, wrong_merchant, test_mode_disabled); 422 no_recipient_key without GOOGLE_PAY_PRIVATE_KEYS; 503 when Google\'s root signing keys cannot be had (root_keys_unavailable, no_valid_root_key) or the thread decrypting the token stopped (decryption_unavailable: send it again). See docs/payment-methods.md.',
      body: GooglePayTokenizeBody,
      response: { 201: GooglePayTokenizeResponse, ...problems(...WRITE) },
    },
  }, async (request, reply) => {
    const intent = await googlePay.tokenize(principalOf(request), request.body.google_payment_method_token);
    return reply.code(201).send({ token_intent: presentTokenIntent(intent) });
  });
}
