import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { Principal } from '../../src/access/principal.ts';
import { Authenticator } from '../../src/http/auth.ts';

const KEY = 'key_' + 'a'.repeat(43);

function principal(tenantId = 't1'): Principal {
  return { kind: 'application', tenantId, actorId: 'a1', applicationId: 'a1', applicationType: 'private', keyId: 'k1', permissions: [], rules: [], expiresAt: undefined };
}

/** A resolver whose lookups stay pending until released, counting them. */
function gatedResolver() {
  const calls: { resolve: (p: Principal | undefined) => void; reject: (e: unknown) => void }[] = [];
  const resolver = () => new Promise<Principal | undefined>((resolve, reject) => calls.push({ resolve, reject }));
  return { calls, resolver };
}

describe('Authenticator', () => {
  it('sends one lookup for concurrent requests of one key that miss the cache, and caches its answer', async () => {
    const { calls, resolver } = gatedResolver();
    const auth = new Authenticator(resolver, 5);
    const waiting = Array.from({ length: 64 }, () => auth.authenticate(KEY));
    assert.equal(calls.length, 1);
    calls[0].resolve(principal());
    const all = await Promise.all(waiting);
    assert.ok(all.every((p) => p.tenantId === 't1'));
    assert.equal(auth.cached(KEY)?.tenantId, 't1');
    await auth.authenticate(KEY);
    assert.equal(calls.length, 1);
  });

  it('does not let a request that arrives after an invalidation join a lookup started before it', async () => {
    const { calls, resolver } = gatedResolver();
    const auth = new Authenticator(resolver, 5);
    const before = auth.authenticate(KEY);
    auth.invalidate();
    const afterwards = auth.authenticate(KEY);
    assert.equal(calls.length, 2);
    calls[0].resolve(principal('stale'));
    calls[1].resolve(undefined);
    assert.equal((await before).tenantId, 'stale');
    await assert.rejects(afterwards, { status: 401 });
    // The lookup that raced the invalidation is not cached either.
    assert.equal(auth.cached(KEY), undefined);
  });

  it('fails every request that shared a failed lookup, and looks the key up again on the next', async () => {
    const { calls, resolver } = gatedResolver();
    const auth = new Authenticator(resolver, 5);
    const a = auth.authenticate(KEY);
    const b = auth.authenticate(KEY);
    calls[0].reject(new Error('database down'));
    await assert.rejects(a, /database down/);
    await assert.rejects(b, /database down/);
    const c = auth.authenticate(KEY);
    assert.equal(calls.length, 2);
    calls[1].resolve(principal());
    assert.equal((await c).tenantId, 't1');
  });

  it('answers an unknown key with 401 for every request that shared its lookup, without caching', async () => {
    const { calls, resolver } = gatedResolver();
    const auth = new Authenticator(resolver, 5);
    const waiting = [auth.authenticate(KEY), auth.authenticate(KEY)];
    calls[0].resolve(undefined);
    for (const w of waiting) await assert.rejects(w, { status: 401 });
    const again = auth.authenticate(KEY);
    assert.equal(calls.length, 2);
    calls[1].resolve(undefined);
    await assert.rejects(again, { status: 401 });
  });

  it('with the cache off, looks the key up for every request, concurrent or not', async () => {
    const { calls, resolver } = gatedResolver();
    const auth = new Authenticator(resolver, 0);
    const waiting = [auth.authenticate(KEY), auth.authenticate(KEY)];
    assert.equal(calls.length, 2);
    for (const c of calls) c.resolve(principal());
    await Promise.all(waiting);
    assert.equal(auth.cached(KEY), undefined);
  });
  describe('refreshing a key in use before its entry ends', () => {
    /** An Authenticator with a 5 s cache whose key was looked up at time 0; Date is mocked. */
    async function cachedAtZero(t: { after(fn: () => void): void }) {
      mock.timers.enable({ apis: ['Date'], now: 0 });
      t.after(() => mock.timers.reset());
      const { calls, resolver } = gatedResolver();
      const auth = new Authenticator(resolver, 5);
      const first = auth.authenticate(KEY);
      calls[0].resolve(principal('t1'));
      await first;
      return { auth, calls };
    }
    const settle = () => new Promise((r) => setImmediate(r));

    it('serves the entry while one lookup refreshes it, from 80% of its life on', async (t) => {
      const { auth, calls } = await cachedAtZero(t);
      mock.timers.tick(3_999);
      assert.equal(auth.cached(KEY)?.tenantId, 't1');
      assert.equal(calls.length, 1, 'no refresh before 4 s');
      mock.timers.tick(1);
      assert.equal(auth.cached(KEY)?.tenantId, 't1', 'served from the entry during the refresh');
      assert.equal((await auth.authenticate(KEY)).tenantId, 't1');
      assert.equal(calls.length, 2, 'one refresh, however many requests');
      calls[1].resolve(principal('t2'));
      await settle();
      // Past the first entry's end: the refreshed one answers, and nobody waited for a lookup.
      mock.timers.tick(2_000);
      assert.equal(auth.cached(KEY)?.tenantId, 't2');
      assert.equal(calls.length, 2);
    });

    it('drops the entry at once when the refresh no longer finds the key', async (t) => {
      const { auth, calls } = await cachedAtZero(t);
      mock.timers.tick(4_500);
      assert.equal(auth.cached(KEY)?.tenantId, 't1');
      calls[1].resolve(undefined);
      await settle();
      assert.equal(auth.cached(KEY), undefined);
      const again = auth.authenticate(KEY);
      calls[2].resolve(undefined);
      await assert.rejects(again, { status: 401 });
    });

    it('keeps the entry to its end when the refresh fails, and then looks the key up again', async (t) => {
      const { auth, calls } = await cachedAtZero(t);
      mock.timers.tick(4_500);
      auth.cached(KEY);
      calls[1].reject(new Error('database down'));
      await settle();
      assert.equal(auth.cached(KEY)?.tenantId, 't1', 'still within the entry');
      assert.equal(calls.length, 2, 'one refresh per entry');
      mock.timers.tick(500);
      assert.equal(auth.cached(KEY), undefined, 'ended at 5 s as before');
      const next = auth.authenticate(KEY);
      assert.equal(calls.length, 3);
      calls[2].resolve(principal('t3'));
      assert.equal((await next).tenantId, 't3');
    });

    it('does not cache a refresh that raced an invalidation', async (t) => {
      const { auth, calls } = await cachedAtZero(t);
      mock.timers.tick(4_500);
      auth.cached(KEY);
      auth.invalidate();
      calls[1].resolve(principal('stale'));
      await settle();
      assert.equal(auth.cached(KEY), undefined);
    });
  });
});
