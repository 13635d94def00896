import type { Req } from './lib.ts';

/** What the scenario needs of run.ts's context: set-up calls with the management key. */
type Context = { call(method: string, path: string, json?: unknown, key?: string): Promise<any> };

/**
 * The threeds.frictionless scenario: each iteration is two requests on one connection, a 3DS
 * session created for a card token (token:use, decrypt, the simulator's version lookup, the
 * session row with its audit entry and event) and then authenticated (the whole body validated,
 * the card read again, the simulated AReq/ARes, the result stored under a lock with its audit
 * entry and event). The card is a frictionless-success test card (5204247750001471: Y); TOKENS
 * tokens are cycled, one per iteration.
 */
const TOKENS = 50;
const CARD = { type: 'card', data: { number: '5204247750001471', expiration_month: 12, expiration_year: 2030 } };
const APP = {
  name: 'bench-3ds',
  type: 'private',
  permissions: ['3ds:session:create', '3ds:session:authenticate'],
  rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }],
};
/** A payment from a browser session, as a checkout sends it. */
const AUTHENTICATE = {
  authentication_category: 'payment',
  authentication_type: 'payment-transaction',
  purchase_info: { amount: '1999', currency: 'USD', exponent: '2', date: '20250131174502', transaction_type: 'purchase' },
  merchant_info: { mid: 'MID-1', acquirer_bin: '411111', name: 'Example Store', country_code: '840', category_code: '5999' },
  requestor_info: { id: 'requestor-1', name: 'Example Store', url: 'https://store.example' },
  cardholder_info: { name: 'Jane Doe', email: 'jane@example.com' },
};

let setup: Promise<{ key: string; ids: string[] }> | undefined;
/** A private key for 3DS and TOKENS card tokens, once per run. */
export const threeds = (ctx: Context) =>
  (setup ??= (async () => {
    const { key } = await ctx.call('POST', '/applications', APP);
    const ids: string[] = [];
    for (let i = 0; i < TOKENS; i += 10) {
      const batch = await Promise.all(Array.from({ length: Math.min(10, TOKENS - i) }, () => ctx.call('POST', '/tokens', CARD, key)));
      ids.push(...batch.map((t: { id: string }) => t.id));
    }
    return { key, ids };
  })());

export function threedsRequests(_: Context, { key, ids }: Record<string, any>): Req[] {
  const headers = { 'svc-api-key': key };
  return ids.flatMap((id: string): Req[] => [
    { method: 'POST', path: '/3ds/sessions', headers, json: { token_id: id, type: 'customer' }, capture: 'id' },
    { method: 'POST', path: '/3ds/sessions/{id}/authenticate', headers, json: AUTHENTICATE },
  ]);
}
