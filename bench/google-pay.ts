import fs from 'node:fs';
import path from 'node:path';
import { googlePayWorld, paymentPayload } from '../test/helpers/google-pay-seal.ts';
import type { Req } from './lib.ts';

/** What the scenario needs of run.ts's context: set-up calls with the management key. */
type Context = { call(method: string, path: string, json?: unknown, key?: string): Promise<any> };

/**
 * The googlepay.tokenize scenario: real ECv2 tokens, sealed here with the bench's own root,
 * intermediate and recipient keys (Coffer is given the recipient's private key and a keys.json
 * with the root key), each verified and decrypted by Coffer and stored as a token intent.
 * TOKENS distinct tokens are sealed once and cycled: Coffer keeps no record of the ones it has
 * read, so each request does the whole work.
 */
const world = googlePayWorld();
const TOKENS = 200;

/** Coffer's settings for the scenario; the keys.json goes in `dir`. */
export function googlePayEnv(dir: string): Record<string, string> {
  const keysFile = path.join(dir, 'google-pay-root-keys.json');
  fs.writeFileSync(keysFile, world.rootKeys());
  return { GOOGLE_PAY_PRIVATE_KEYS: world.privateKey, GOOGLE_PAY_ROOT_KEYS: keysFile };
}

let setup: Promise<{ key: string; tokens: unknown[] }> | undefined;
/** A private key with token-intent:create, and the sealed tokens for this tenant, once per run. */
export const googlePay = (ctx: Context) =>
  (setup ??= (async () => {
    const { key } = await ctx.call('POST', '/applications', { name: 'bench-google-pay', type: 'private', permissions: ['token-intent:create'] });
    const tenant = await ctx.call('GET', '/tenants/self');
    const tokens = Array.from({ length: TOKENS }, (_, i) =>
      world.seal(paymentPayload({ gatewayMerchantId: tenant.id, messageId: `bench-${i}`, pan: '4242424242424242', expirationYear: new Date().getUTCFullYear() + 3 })),
    );
    return { key, tokens };
  })());

export function googlePayRequests(_: Context, { key, tokens }: Record<string, any>): Req[] {
  return tokens.map((token: unknown) => ({
    method: 'POST',
    path: '/connections/google-pay/tokenize',
    headers: { 'svc-api-key': key },
    json: { google_payment_method_token: token },
  }));
}
