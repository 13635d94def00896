import { testBankAccountVerifier } from './test-provider.ts';

/**
 * Bank account verification providers: who answers whether a bank account can receive ACH
 * transfers (POST /enrichments/bank-account-verify, docs/payment-methods.md). A provider gets
 * the account as arguments, never a store, and imports nothing from features/.
 */

/** The spec's statuses: found and accepts ACH; not found or not validated (ACH will fail); not found, may accept ACH. */
export const BANK_ACCOUNT_STATUSES = ['enabled', 'disabled', 'inconclusive'] as const;
export type BankAccountStatus = (typeof BANK_ACCOUNT_STATUSES)[number];

/** An account to verify, in plaintext: `country` an ISO 3166-1 alpha-2 code, the numbers digit strings. */
export type BankAccount = { country: string; routingNumber: string; accountNumber: string };

export interface BankAccountVerifier {
  /**
   * The account's status. A provider that cannot answer (its service is down, refuses, times
   * out) throws; the request is then answered 502. It bounds its own time (calls out through
   * the guarded OutboundClient, with a timeout), and never puts the account number into what it
   * throws or logs: the caller scrubs it from the error it logs, but cannot catch it reformatted.
   */
  verify(account: BankAccount): Promise<BankAccountStatus>;
}

/**
 * The built-in providers by the name BANK_VERIFICATION_PROVIDER selects. A real provider is
 * added here under its own name (its settings read in config.ts), or handed to start() as
 * StartOptions.bankAccountVerifier by code that embeds Coffer.
 */
export const BANK_VERIFICATION_PROVIDERS = {
  test: () => testBankAccountVerifier,
} satisfies Record<string, () => BankAccountVerifier>;

export type BankVerificationProviderName = keyof typeof BANK_VERIFICATION_PROVIDERS;
export const BANK_VERIFICATION_PROVIDER_NAMES = Object.keys(BANK_VERIFICATION_PROVIDERS) as BankVerificationProviderName[];

export function createBankAccountVerifier(name: BankVerificationProviderName): BankAccountVerifier {
  return BANK_VERIFICATION_PROVIDERS[name]();
}
