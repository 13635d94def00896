import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import type { Database } from '../../src/db/database.ts';
import { TenantQuotas } from '../../src/features/tenants/quotas.ts';

/** A database whose settings reads stay pending until released, counting them. */
function gatedSettings() {
  const reads: { resolve: (settings: Record<string, unknown> | undefined) => void; reject: (e: unknown) => void }[] = [];
  const db = {
    withoutAmbient: <T>(fn: () => T) => fn(),
    one: () => new Promise((resolve, reject) => reads.push({ resolve: (settings) => resolve(settings && { settings }), reject })),
  } as unknown as Database;
  return { db, reads };
}

const settle = () => new Promise((r) => setImmediate(r));

describe('TenantQuotas', () => {
  /** Quotas with a 5 s cache whose tenant was read at time 0 (limit 7); Date is mocked. */
  async function readAtZero(t: { after(fn: () => void): void }) {
    mock.timers.enable({ apis: ['Date'], now: 0 });
    t.after(() => mock.timers.reset());
    const { db, reads } = gatedSettings();
    const quotas = new TenantQuotas(db, { detokenize_limit: 100, token_intent_ttl_hours: 24 }, 5_000);
    const first = quotas.of('t1');
    reads[0].resolve({ detokenize_limit: 7 });
    assert.equal((await first).detokenize_limit, 7);
    return { quotas, reads };
  }

  it('serves the cached quotas while one read refreshes them, from 80% of the entry’s life on', async (t) => {
    const { quotas, reads } = await readAtZero(t);
    mock.timers.tick(3_999);
    assert.equal((await quotas.of('t1')).detokenize_limit, 7);
    assert.equal(reads.length, 1, 'no read before 4 s');
    mock.timers.tick(1);
    const during = [quotas.of('t1'), quotas.of('t1')];
    assert.equal(reads.length, 2, 'one refresh, however many requests');
    for (const q of during) assert.equal((await q).detokenize_limit, 7, 'answered from the entry, not the pending read');
    reads[1].resolve({ detokenize_limit: 9 });
    await settle();
    // Past the first entry's end: the refreshed quotas answer without another read.
    mock.timers.tick(2_000);
    assert.equal((await quotas.of('t1')).detokenize_limit, 9);
    assert.equal(reads.length, 2);
  });

  it('keeps the entry to its end when the refresh fails, then reads again', async (t) => {
    const { quotas, reads } = await readAtZero(t);
    mock.timers.tick(4_500);
    await quotas.of('t1');
    reads[1].reject(new Error('database down'));
    await settle();
    assert.equal((await quotas.of('t1')).detokenize_limit, 7);
    assert.equal(reads.length, 2, 'one refresh per entry');
    mock.timers.tick(500);
    const next = quotas.of('t1');
    assert.equal(reads.length, 3, 'the entry ended at 5 s');
    reads[2].resolve(undefined);
    assert.equal((await next).detokenize_limit, 100, 'no settings: the process default');
  });
});
