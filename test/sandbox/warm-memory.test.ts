/**
 * The memory idle warm isolates hold together is bounded (src/sandbox/pool.ts): each keeps what
 * its code left in its module, so without a bound one tenant's reactors could keep the pool's
 * size × the memory limit of the host's memory while doing nothing.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { IsolatePool, type WarmIsolate } from '../../src/sandbox/pool.ts';
import { Sandbox } from '../../src/sandbox/index.ts';
import { value } from './helpers.ts';

const MB = 1024 * 1024;

/**
 * Keeps `mb` MB of array buffers in module state (exactly that much, with no garbage on the heap
 * to make the measurement vary); answers how many runs its module has seen.
 */
const HOARDER = (mb: number) => `const keep = [];
for (let i = 0; i < ${mb}; i++) keep.push(new Uint8Array(1024 * 1024).fill(i));
let runs = 0;
module.exports = async () => ++runs;`;

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

function fakeIsolate(key: string, heldBytes: number): WarmIsolate & { disposed: () => boolean } {
  const isolate = { isDisposed: false, dispose() { this.isDisposed = true; } };
  return { key, tenantId: 'T', memoryMb: 128, isolate, heldBytes, unmeasuredRuns: 0, disposed: () => isolate.isDisposed } as unknown as WarmIsolate & { disposed: () => boolean };
}

describe('the warm isolates\' memory budget', () => {
  it('evicts the least recently used idle isolates once they hold more than the budget together', () => {
    const pool = new IsolatePool(50, 100);
    const a = fakeIsolate('a', 40);
    const b = fakeIsolate('b', 40);
    const c = fakeIsolate('c', 40);
    pool.put(a);
    pool.put(b);
    assert.equal(pool.bytes, 80);
    pool.put(c);
    assert.equal(pool.size, 2);
    assert.equal(pool.bytes, 80);
    assert.ok(a.disposed() && !b.disposed() && !c.disposed());
    assert.equal(pool.take('a'), undefined);
    // A new measurement of an idle one counts at once; of a taken one, from its next put.
    const taken = pool.take('b')!;
    assert.equal(pool.bytes, 40);
    pool.measured(taken, 70);
    assert.equal(pool.bytes, 40);
    pool.put(taken);
    assert.equal(pool.size, 1);
    assert.ok(c.disposed(), 'c was the least recently used');
    pool.measured(taken, 20);
    assert.equal(pool.bytes, 20);
    // One larger than the budget on its own is not kept, and takes no other with it.
    const huge = fakeIsolate('h', 101);
    pool.put(huge);
    assert.ok(huge.disposed());
    assert.equal(pool.bytes, 20);
    assert.equal(pool.size, 1);
    pool.measured(taken, 101);
    assert.ok(taken.isolate.isDisposed);
    assert.equal(pool.size, 0);
    assert.equal(pool.bytes, 0);
  });

  it('a budget of 0 (SANDBOX_WARM_MEMORY_MB=0) keeps no idle isolate: every run starts afresh', async () => {
    const none = new Sandbox({ maxWarmBytes: 0 });
    try {
      const code = 'let n = 0; module.exports = async () => ++n;';
      const run = () => none.run({ tenantId: 'T', cacheKey: 'k', code, req: {}, limits: { memoryMb: 16, timeoutMs: 20_000 } });
      assert.equal(value(await run()), 1);
      assert.equal(none.warmIsolates, 0);
      assert.equal(value(await run()), 1);
    } finally {
      await none.dispose();
    }
  });

  describe('in the sandbox', () => {
    const sb = new Sandbox({ maxWarmBytes: 48 * MB });
    after(() => sb.dispose());
    const run = (cacheKey: string, code: string) => sb.run({ tenantId: 'T', cacheKey, code, req: {}, limits: { memoryMb: 64, timeoutMs: 20_000 } });

    it('measures an isolate after its first run and drops the oldest when the idle ones hold too much', async () => {
      assert.equal(value(await run('small', 'let n = 0; module.exports = async () => ++n;')), 1);
      await until(() => sb.warmBytes > 0, 'the first run is measured');
      const small = sb.warmBytes;
      assert.ok(small < 16 * MB, `a small isolate holds ${small} bytes`);
      assert.equal(value(await run('small', 'let n = 0; module.exports = async () => ++n;')), 2, 'it stays warm');

      assert.equal(value(await run('big-1', HOARDER(30))), 1);
      await until(() => sb.warmBytes > 30 * MB, 'the hoarder is measured');
      assert.equal(sb.warmIsolates, 2);
      // A second hoarder pushes the idle ones past 48 MB: the least recently used go first.
      assert.equal(value(await run('big-2', HOARDER(30))), 1);
      await until(() => sb.warmIsolates === 1, 'the oldest idle isolates are dropped');
      assert.ok(sb.warmBytes <= 48 * MB);
      // big-1 lost its isolate, and with it its module state: its next run starts afresh.
      assert.equal(value(await run('big-1', HOARDER(30))), 1);
      assert.equal(value(await run('small', 'let n = 0; module.exports = async () => ++n;')), 1);
    });
  });
});
