import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Coalescer } from '../../src/db/coalescer.ts';

/** A run that records each batch it gets and doubles every item; items equal to `poison` fail their batch. */
function doubler(opts: { maxBatch?: number; maxInFlight?: number; isolateFailures?: boolean; poison?: number; delayMs?: number } = {}) {
  const batches: number[][] = [];
  let running = 0;
  let maxRunning = 0;
  const c = new Coalescer<number, number>(
    async (items) => {
      batches.push(items);
      running++;
      maxRunning = Math.max(maxRunning, running);
      try {
        await new Promise((resolve) => setTimeout(resolve, opts.delayMs ?? 1));
        if (items.includes(opts.poison ?? NaN)) throw new Error(`poisoned by ${opts.poison}`);
        return items.map((n) => n * 2);
      } finally {
        running--;
      }
    },
    { maxBatch: opts.maxBatch ?? 100, maxInFlight: opts.maxInFlight ?? 4, isolateFailures: opts.isolateFailures ?? true },
  );
  return { c, batches, maxRunning: () => maxRunning };
}

describe('Coalescer', () => {
  it('hands items submitted in one turn of the event loop to one run, and each caller its own result', async () => {
    const { c, batches } = doubler();
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => c.submit(n)));
    assert.deepEqual(results, [2, 4, 6, 8, 10]);
    assert.deepEqual(batches, [[1, 2, 3, 4, 5]]);
  });

  it('splits at maxBatch and runs at most maxInFlight batches at once; later items wait for the next', async () => {
    const { c, batches, maxRunning } = doubler({ maxBatch: 2, maxInFlight: 2, delayMs: 5 });
    const results = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((n) => c.submit(n)));
    assert.deepEqual(results, [2, 4, 6, 8, 10, 12, 14]);
    assert.ok(batches.every((b) => b.length <= 2), `batches ${JSON.stringify(batches)}`);
    assert.deepEqual(batches.flat().sort(), [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(maxRunning(), 2);
  });

  it('bounds a batch by the weight of its items too: an item heavier than the bound goes alone', async () => {
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(async (items) => (batches.push(items), items), {
      maxBatch: 100, maxInFlight: 1, isolateFailures: false, weigh: (n) => n, maxBatchWeight: 10,
    });
    assert.deepEqual(await Promise.all([4, 5, 2, 30, 1, 9].map((n) => c.submit(n))), [4, 5, 2, 30, 1, 9]);
    assert.deepEqual(batches, [[4, 5], [2], [30], [1, 9]]);
  });

  it('sends the queued items as the next batch before the finished batch\'s callers continue', async () => {
    const order: string[] = [];
    let release!: () => void;
    const c = new Coalescer<string, string>(
      async (items) => {
        order.push(`run ${items.join(',')}`);
        if (items[0] === 'a') await new Promise<void>((resolve) => (release = resolve));
        return items;
      },
      { maxBatch: 10, maxInFlight: 1, isolateFailures: false },
    );
    const first = c.submit('a').then(() => order.push('a answered'));
    await new Promise((resolve) => setImmediate(resolve));
    const queued = [c.submit('b'), c.submit('c')];
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(order, ['run a'], 'b and c wait while the one slot is taken');
    release();
    await Promise.all([first, ...queued]);
    assert.deepEqual(order, ['run a', 'run b,c', 'a answered']);
  });

  it('retries the items of a failed batch in halves, until the bad item fails alone', async () => {
    const { c, batches } = doubler({ poison: 3 });
    const settled = await Promise.allSettled([1, 2, 3, 4].map((n) => c.submit(n)));
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    assert.deepEqual(settled.filter((s) => s.status === 'fulfilled').map((s) => s.value), [2, 4, 8]);
    assert.match(String((settled[2] as PromiseRejectedResult).reason), /poisoned by 3/);
    assert.deepEqual(batches, [[1, 2, 3, 4], [1, 2], [3, 4], [3], [4]]);
  });

  it('retries within the failed batch\'s slot: no more than maxInFlight runs at once, however large the batch', async () => {
    const { c, batches, maxRunning } = doubler({ poison: 7, maxInFlight: 1, maxBatch: 64 });
    const items = Array.from({ length: 64 }, (_, i) => i);
    const settled = await Promise.allSettled(items.map((n) => c.submit(n)));
    assert.deepEqual(settled.flatMap((s, i) => (s.status === 'rejected' ? [i] : [])), [7]);
    assert.equal(maxRunning(), 1);
    assert.ok(batches.length <= 1 + 2 * Math.log2(64), `${batches.length} runs to find one bad item of 64`);
  });

  it('without isolateFailures, every item of a failed batch gets its error', async () => {
    const { c, batches } = doubler({ poison: 2, isolateFailures: false });
    const settled = await Promise.allSettled([1, 2].map((n) => c.submit(n)));
    assert.deepEqual(settled.map((s) => s.status), ['rejected', 'rejected']);
    assert.equal(batches.length, 1);
  });

  it('a run answering with the wrong number of results fails its items rather than misassigning them', async () => {
    const c = new Coalescer<number, number>(async (items) => items.slice(1), { maxBatch: 10, maxInFlight: 1, isolateFailures: false });
    await assert.rejects(Promise.all([c.submit(1), c.submit(2)]), /2 items produced 1 results/);
  });

  it('retries a failed batch only for failures `isolable` accepts: others fail every item, run once', async () => {
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(
      async (items) => {
        batches.push(items);
        throw Object.assign(new Error(items.includes(2) ? 'bad item' : 'connection lost'), { code: items.includes(2) ? 'item' : 'gone' });
      },
      { maxBatch: 10, maxInFlight: 1, isolateFailures: true, isolable: (err) => (err as { code: string }).code === 'item' },
    );
    const lost = await Promise.allSettled([c.submit(1), c.submit(3)]);
    assert.deepEqual(lost.map((s) => s.status), ['rejected', 'rejected']);
    assert.deepEqual(batches, [[1, 3]], 'not run again: it may have been done');
    batches.length = 0;
    await Promise.allSettled([c.submit(1), c.submit(2)]);
    assert.deepEqual(batches, [[1, 2], [1], [2]]);
  });

  it('a run that answered is never run again, even when its answer does not fit', async () => {
    const batches: number[][] = [];
    const c = new Coalescer<number, number>(async (items) => (batches.push(items), items.slice(1)), { maxBatch: 10, maxInFlight: 1, isolateFailures: true });
    const settled = await Promise.allSettled([c.submit(1), c.submit(2)]);
    assert.deepEqual(settled.map((s) => s.status), ['rejected', 'rejected']);
    assert.deepEqual(batches, [[1, 2]]);
  });

  it('refuses an item at once while the queue is full, as a database out of connections, and serves again once it drains', async () => {
    let release!: () => void;
    const c = new Coalescer<number, number>(
      async (items) => {
        if (items[0] === 0) await new Promise<void>((resolve) => (release = resolve));
        return items;
      },
      { maxBatch: 10, maxInFlight: 1, isolateFailures: false, maxQueued: 3, weigh: (n) => n, maxQueuedWeight: 100 },
    );
    const running = c.submit(0);
    await new Promise((resolve) => setImmediate(resolve));
    const queued = [c.submit(1), c.submit(2), c.submit(3)];
    await assert.rejects(c.submit(4), (err: Error & { code?: string }) => err.code === '53300' && /waiting/.test(err.message));
    release();
    assert.deepEqual(await Promise.all([running, ...queued]), [0, 1, 2, 3]);
    assert.equal(await c.submit(4), 4);
    // By weight too: one item heavier than what may wait.
    await assert.rejects(c.submit(101), { code: '53300' });
  });

  it('keeps serving after a failure', async () => {
    const { c } = doubler({ poison: 1 });
    await assert.rejects(c.submit(1), /poisoned/);
    assert.equal(await c.submit(21), 42);
  });
});
