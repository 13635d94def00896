import type { BankAccount, BankAccountStatus, BankAccountVerifier } from './verifier.ts';

/**
 * The documented test accounts (routing number, account number) and their statuses. 021000020
 * fails the ABA checksum, so its account is reachable only as a us_bank_account_number token
 * with the routing number in the request body (which is not checksum-validated for that reason).
 */
export const TEST_BANK_ACCOUNTS: readonly { routingNumber: string; accountNumber: string; status: BankAccountStatus }[] = [
  { routingNumber: '021000020', accountNumber: '00000', status: 'disabled' },
  { routingNumber: '021000021', accountNumber: '00001', status: 'enabled' },
  { routingNumber: '021000021', accountNumber: '00002', status: 'inconclusive' },
];

const BY_ACCOUNT = new Map(TEST_BANK_ACCOUNTS.map((a) => [`${a.routingNumber}:${a.accountNumber}`, a.status]));

/**
 * BANK_VERIFICATION_PROVIDER=test: answers the test accounts, and `inconclusive` ("not found,
 * it may accept ACH transfers") for every other account, so no real account is ever called
 * disabled or enabled by a provider that knows nothing about it. Calls nothing outside Coffer.
 */
export const testBankAccountVerifier: BankAccountVerifier = {
  async verify(account: BankAccount): Promise<BankAccountStatus> {
    if (account.country !== 'US') return 'inconclusive';
    return BY_ACCOUNT.get(`${account.routingNumber}:${account.accountNumber}`) ?? 'inconclusive';
  },
};
