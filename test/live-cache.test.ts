import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LiveCache } from '../src/live-cache.ts';

/**
 * The cache behind API keys, quotas, reactors and proxies; its sharing, refresh and
 * invalidation are tested through the Authenticator (test/http/auth.test.ts) and TenantQuotas
 * (test/features/tenant-quotas.test.ts). Here: what those do not reach.
 */
describe('LiveCache', () => {
  it('fails the callers of a lookup that throws before returning a promise, and keeps nothing', async () => {
    const cache = new LiveCache<string>(5_000);
    const boom = () => {
      throw new Error('thrown at once');
    };
    await assert.rejects(cache.get('k', boom), /thrown at once/);
    assert.equal(cache.peek('k', boom), undefined);
    assert.equal(await cache.get('k', async () => 'v'), 'v');
  });

  it('keeps at most maxEntries, the oldest going first', async () => {
    const cache = new LiveCache<string>(5_000, 2);
    for (const k of ['a', 'b', 'c']) await cache.get(k, async () => k.toUpperCase());
    const none = async () => undefined;
    assert.equal(cache.peek('a', none), undefined);
    assert.equal(cache.peek('b', none), 'B');
    assert.equal(cache.peek('c', none), 'C');
  });

  it('answers a hit without calling the lookup', async () => {
    const cache = new LiveCache<number>(5_000);
    let calls = 0;
    const load = async () => ++calls;
    assert.equal(await cache.get('k', load), 1);
    assert.equal(await cache.get('k', load), 1);
    assert.equal(calls, 1);
  });
});
