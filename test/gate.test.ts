import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Gate } from '../src/gate.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

test('run admits max calls at once, queues the rest in order, and refuses past maxQueue', async () => {
  const gate = new Gate(1, { maxQueue: 1, refuse: () => new Error('full') });
  const order: string[] = [];
  const hold = deferred();
  const first = gate.run(async () => {
    order.push('first');
    await hold.promise;
  });
  const second = gate.run(async () => {
    order.push('second');
  });
  await assert.rejects(gate.run(async () => order.push('third')), /full/);
  assert.deepEqual(order, ['first']);
  hold.resolve();
  await Promise.all([first, second]);
  assert.deepEqual(order, ['first', 'second']);
});

test('tryRun never waits: with no slot free it is refused at once, with its own error when given', async () => {
  const gate = new Gate(1, { maxQueue: 10, refuse: () => new Error('queue full') });
  const hold = deferred();
  const running = gate.run(() => hold.promise);
  await assert.rejects(gate.tryRun(async () => 'ran'), /queue full/);
  await assert.rejects(gate.tryRun(async () => 'ran', () => new Error('would wait')), /would wait/);
  hold.resolve();
  await running;
  assert.equal(await gate.tryRun(async () => 'ran'), 'ran');
});

test('a slot is freed when the call throws', async () => {
  const gate = new Gate(1);
  await assert.rejects(gate.run(async () => {
    throw new Error('boom');
  }), /boom/);
  assert.equal(await gate.tryRun(async () => 'next'), 'next');
});

test('a freed slot goes to the first waiter: a caller arriving before it resumes does not get in too', async () => {
  const gate = new Gate(1);
  let inside = 0;
  let most = 0;
  const enter = async () => {
    inside++;
    most = Math.max(most, inside);
    await new Promise(setImmediate);
    inside--;
  };
  const hold = deferred();
  const first = gate.run(() => hold.promise);
  const waiter = gate.run(enter);
  // Runs right after the slot is freed, before the waiter's continuation.
  const newcomer = hold.promise.then(() => gate.run(enter));
  hold.resolve();
  await Promise.all([first, waiter, newcomer]);
  assert.equal(most, 1);
});
