/** The sandbox processes' IPC outbox: what is queued in one turn of the event loop goes in one write. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Outbox, unbatch, type Batch } from '../../src/sandbox/process/outbox.ts';

const turn = () => new Promise((r) => setImmediate(r));

describe('the IPC outbox', () => {
  it('sends the messages of one turn in one write, in order; a lone message as itself', async () => {
    const writes: (number | Batch<number>)[] = [];
    const outbox = new Outbox<number>((m) => writes.push(m));
    outbox.push(1);
    outbox.push(2);
    outbox.push(3);
    assert.deepEqual(writes, [], 'nothing is written before the turn ends');
    await turn();
    outbox.push(4);
    await turn();
    assert.deepEqual(writes, [{ t: 'batch', messages: [1, 2, 3] }, 4]);
    assert.deepEqual(writes.flatMap((w) => unbatch(w)), [1, 2, 3, 4]);
  });

  it('flush sends what is queued at once, and the turn\'s end then has nothing left to send', async () => {
    const writes: unknown[] = [];
    const outbox = new Outbox<{ t: string }>((m) => writes.push(m));
    outbox.push({ t: 'run' });
    outbox.flush();
    assert.deepEqual(writes, [{ t: 'run' }]);
    await turn();
    assert.equal(writes.length, 1);
  });
});
