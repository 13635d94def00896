import { Type } from 'typebox';
import { TokenIntentSchema } from '../token-intents/schema.ts';

export const GooglePayTokenizeBody = Type.Object({
  google_payment_method_token: Type.Union([
    Type.Object({
      protocolVersion: Type.String({ description: '`ECv2`, or `Coffer` for a test-mode token' }),
      signature: Type.String(),
      intermediateSigningKey: Type.Object({ signedKey: Type.String(), signatures: Type.Array(Type.String()) }),
      signedMessage: Type.String(),
    }, { description: 'The payment token as Google Pay hands it over' }),
    Type.String({ description: 'The same token as its JSON text', maxLength: 65_536 }),
  ]),
}, { additionalProperties: false });

export const GooglePayTokenizeResponse = Type.Object({ token_intent: TokenIntentSchema });
