import type { Req } from './lib.ts';

/** What the scenario needs of run.ts's context: set-up calls with the management key. */
type Context = { call(method: string, path: string, json?: unknown, key?: string): Promise<any> };

/**
 * The transactions.create scenario: each request is a payment authorized and captured in one
 * call (intent capture) on a coffer-test connection: the body and use-case rules checked, the
 * connection's processor (cached), the card token read through token:use and decrypted, the
 * transaction written pending its call with the card's use and transaction.created, the test
 * processor's answer, and the outcome recorded with transaction.authorized and .captured.
 * TOKENS card tokens of the approving test card (4242…) are cycled.
 */
const TOKENS = 50;
const CARD = { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' } };
const APP = {
  name: 'bench-payments',
  type: 'private',
  permissions: ['orchestration:transaction:capture'],
  rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }],
};

let setup: Promise<{ key: string; ids: string[]; connection: string }> | undefined;
/** A private key, a coffer-test connection and TOKENS card tokens, once per run. */
export const payments = (ctx: Context) =>
  (setup ??= (async () => {
    const { key } = await ctx.call('POST', '/applications', APP);
    const { id: connection } = await ctx.call('POST', '/orchestration/connections', { name: 'bench acquirer', processor: 'coffer-test' });
    const ids: string[] = [];
    for (let i = 0; i < TOKENS; i += 10) {
      const batch = await Promise.all(Array.from({ length: Math.min(10, TOKENS - i) }, () => ctx.call('POST', '/tokens', CARD, key)));
      ids.push(...batch.map((t: { id: string }) => t.id));
    }
    return { key, ids, connection };
  })());

export function paymentRequests(_: Context, { key, ids, connection }: Record<string, any>): Req[] {
  const headers = { 'svc-api-key': key };
  return ids.map((token: string): Req => ({
    method: 'POST', path: '/orchestration/transactions', headers, json: { amount: 1999, currency: 'USD', connection_id: connection, token, intent: 'capture' },
  }));
}
