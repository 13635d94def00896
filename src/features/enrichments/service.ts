import type { Principal } from '../../access/principal.ts';
import type { Transform } from '../../access/rules.ts';
import { BANK_ACCOUNT_STATUSES, type BankAccountStatus, type BankAccountVerifier } from '../../bank-verification/verifier.ts';
import type { Item } from '../../db/group-commit.ts';
import { ApiError } from '../../http/errors.ts';
import type { Logger } from '../../logger.ts';
import { abaValid } from '../../vault/checksums.ts';
import type { LogService } from '../logs/service.ts';
import type { TokenService } from '../tokens/service.ts';
import type { TokenRow } from '../tokens/store.ts';
import type { BankAccountVerifyBody } from './schema.ts';

export type EnrichmentService = ReturnType<typeof createEnrichmentService>;

/** Countries whose accounts can be verified: routing numbers and both bank token types are US ones. */
export const BANK_VERIFICATION_COUNTRIES = ['US'];
const BANK_TOKEN_TYPES = ['bank', 'us_bank_account_number'];
/** How a failed provider's error is logged in place of the account number. */
const REDACTED = '[redacted]';

/**
 * Enrichments: what Coffer can tell about a token's data without showing it. Bank account
 * verification hands the account to the configured provider (src/bank-verification/) and
 * answers only its status.
 */
export function createEnrichmentService(deps: {
  tokens: Pick<TokenService, 'useOne'>;
  logs: Pick<LogService, 'writeItems'>;
  verifier: BankAccountVerifier;
  log: Logger;
}) {
  const { tokens, logs, verifier, log } = deps;

  return {
    /**
     * POST /enrichments/bank-account-verify. Checked in this order: the country (400); the
     * token: 404 unknown or another tenant's, 403 without token:use on its container; then the
     * request against the token: its type (400), routing_number (400), and a transform that
     * shows the data (403). Only then is the use audited, before the account goes to the provider.
     */
    async verifyBankAccount(principal: Principal, body: BankAccountVerifyBody): Promise<{ status: BankAccountStatus }> {
      const country = body.country_code ?? 'US';
      if (!BANK_VERIFICATION_COUNTRIES.includes(country)) {
        throw ApiError.field('body.country_code', `unsupported country "${country}": bank account verification supports ${BANK_VERIFICATION_COUNTRIES.join(', ')} accounts only`);
      }
      const audit: Item[] = [];
      const v = await tokens.useOne(principal, body.token_id, {
        purpose: 'bank account verification',
        audit,
        check: (row, transform) => checkUse(row, transform, body),
      });
      const account = v.row.type === 'bank'
        ? (v.data as { routing_number: string; account_number: string })
        : { routing_number: body.routing_number!, account_number: v.data as string };
      // Written before the account goes anywhere: a use the provider then fails on was a use.
      await logs.writeItems(audit);
      // Defensive: a bank token's routing number passed the ABA checksum when it was stored, so
      // this holds unless data predates that check. A routing number failing it routes no ACH
      // transfer ("disabled"), and is not sent out. A routing_number in the body is not checked:
      // the documented disabled test account's (021000020) fails the checksum.
      if (v.row.type === 'bank' && !abaValid(account.routing_number)) return { status: 'disabled' };
      let status: unknown;
      try {
        status = await verifier.verify({ country, routingNumber: account.routing_number, accountNumber: account.account_number });
      } catch (err) {
        const e = err as Error | undefined;
        const scrub = (text: unknown) => (typeof text === 'string' ? text.split(account.account_number).join(REDACTED) : undefined);
        log.error({ err: { name: scrub(e?.name), message: scrub(e?.message), stack: scrub(e?.stack) }, tokenId: v.row.id }, 'bank account verification provider failed');
        throw new ApiError(502, 'The bank account verification provider did not answer; retry later.');
      }
      if (!(BANK_ACCOUNT_STATUSES as readonly unknown[]).includes(status)) {
        log.error({ tokenId: v.row.id, answer: typeof status }, 'bank account verification provider answered no known status');
        throw new ApiError(502, 'The bank account verification provider gave no usable answer; retry later.');
      }
      return { status: status as BankAccountStatus };
    },
  };
}

/** Refuses a verification the token cannot take, before its data is decrypted. */
function checkUse(row: TokenRow, transform: Transform, body: BankAccountVerifyBody): void {
  if (!BANK_TOKEN_TYPES.includes(row.type)) {
    throw ApiError.field('body.token_id', `token "${row.id}" is of type ${row.type}: bank account verification takes a token of type ${BANK_TOKEN_TYPES.join(' or ')}`);
  }
  if (row.type === 'bank' && body.routing_number !== undefined) {
    throw ApiError.field('body.routing_number', 'applies only to a us_bank_account_number token: a bank token holds its own routing number');
  }
  if (row.type === 'us_bank_account_number' && body.routing_number === undefined) {
    throw ApiError.field('body.routing_number', 'is required with a us_bank_account_number token, which holds only the account number');
  }
  if (transform !== 'reveal') {
    throw ApiError.forbidden(
      `The API key's token:use on token ${row.id} ${transform === 'mask' ? 'masks' : 'redacts'} its data: verifying the account needs the data itself (transform reveal).`,
    );
  }
}
