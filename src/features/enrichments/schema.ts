import { Type, type Static } from 'typebox';
import { BANK_ACCOUNT_STATUSES } from '../../bank-verification/verifier.ts';
import { TOKEN_ID_PATTERN } from '../tokens/schema.ts';

export const BankAccountVerifyBody = Type.Object({
  token_id: Type.String({ pattern: TOKEN_ID_PATTERN, description: 'The id of a token of type bank or us_bank_account_number' }),
  country_code: Type.Optional(Type.String({
    pattern: '^[A-Z]{2}$',
    default: 'US',
    description: 'ISO 3166-1 alpha-2 country code, upper case; only US is supported',
  })),
  routing_number: Type.Optional(Type.String({
    pattern: '^[0-9]{9}$',
    description: 'The 9-digit ABA routing number of the account; required with a us_bank_account_number token, refused with a bank token (which holds its own). Not checksum-validated: a documented test account fails the checksum.',
  })),
}, { additionalProperties: false });
export type BankAccountVerifyBody = Static<typeof BankAccountVerifyBody>;

export const BankAccountVerification = Type.Object({
  status: Type.Enum([...BANK_ACCOUNT_STATUSES], {
    description: '`enabled`: the account was found and accepts ACH transfers; `disabled`: not found or not validated, ACH transfers will fail; `inconclusive`: not found, validation inconclusive, it may accept ACH transfers',
  }),
});
