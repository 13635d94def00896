import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FairGate, type Ticket } from '../../src/sandbox/fair-gate.ts';
import { Sandbox, type SdkHost } from '../../src/sandbox/index.ts';

/**
 * Admission by tenant (src/sandbox/fair-gate.ts): each tenant's share of the slots, the queue
 * past it, runs of the same code riding a slot in use, and the riders given back when another
 * tenant waits — first on the gate alone, then through sandbox processes running real code.
 */
const tick = () => new Promise((r) => setImmediate(r));

/** Settles to the ticket, recording `name` in `order` when it does. */
function track(order: string[], name: string, p: Promise<Ticket | undefined>): Promise<Ticket | undefined> {
  return p.then((t) => (order.push(name), t));
}

describe('FairGate', () => {
  it('gives each key at most its share, queues the rest in turn, and refuses past the queue', async () => {
    const gate = new FairGate(3, 2, 2);
    const a1 = await gate.acquire('a', 'x');
    const a2 = await gate.acquire('a', 'x');
    assert.ok(a1 && a2);
    const order: string[] = [];
    const a3 = track(order, 'a3', gate.acquire('a', 'x'));
    const a4 = track(order, 'a4', gate.acquire('a', 'x'));
    assert.equal(await gate.acquire('a', 'x'), undefined, 'a third waiting run of a is refused');
    const b1 = await gate.acquire('b', 'x');
    assert.ok(b1, 'b gets the slot a may not take');
    const b2 = track(order, 'b2', gate.acquire('b', 'x'));
    assert.equal(await gate.acquire('c', 'x', { wait: false }), undefined, 'no slot free now, and c does not wait');
    a1.release();
    await tick();
    b1.release();
    await tick();
    assert.deepEqual(order, ['a3', 'b2']);
    (await a3)!.release();
    await tick();
    assert.deepEqual(order, ['a3', 'b2', 'a4']);
    (await a4)!.release();
    (await b2)!.release();
    a2.release();
    assert.equal(gate.active, 0);
    assert.equal(gate.waiting, 0);
  });

  it('lets runs of the same code ride a slot in use once the share is, counted as waiting, up to the depth', async () => {
    const gate = new FairGate(4, 1, 5, { depth: 3 });
    const a1 = (await gate.acquire('a', 'x'))!;
    const a2 = (await gate.acquire('a', 'x'))!;
    const a3 = (await gate.acquire('a', 'x'))!;
    assert.deepEqual([a2.slot, a2.ahead, a3.slot, a3.ahead], [a1.slot, 1, a1.slot, 2], 'two ride behind the first, in the order sent');
    assert.equal(gate.active, 1, 'riders take no slot of their own');
    assert.equal(gate.waiting, 2);
    assert.equal(await gate.acquire('a', 'x', { wait: false }), undefined, 'a run that may not wait never rides');
    const order: string[] = [];
    const a4 = track(order, 'a4', gate.acquire('a', 'x'));
    const a5 = track(order, 'a5', gate.acquire('a', 'y'));
    const a6 = track(order, 'a6', gate.acquire('a', 'x'));
    assert.equal(gate.waiting, 5);
    assert.equal(await gate.acquire('a', 'x'), undefined, 'riders count against the queue: a sixth waiting run is refused');
    await tick();
    assert.deepEqual(order, [], 'the slot is full: the rest wait here');

    a1.release();
    await tick();
    assert.deepEqual(order, ['a4'], 'the first waiter runs the same code: it boards the slot');
    assert.equal((await a4)!.slot, a1.slot);
    a2.release();
    await tick();
    assert.deepEqual(order, ['a4'], 'the next waiter runs other code: it waits for a slot of its own, and a6 stays behind it');
    a3.release();
    (await a4)!.release();
    await tick();
    assert.deepEqual(order, ['a4', 'a5'], 'the slot freed and went to the other code');
    assert.notEqual((await a5)!.slot, a1.slot);
    (await a5)!.release();
    await tick();
    assert.deepEqual(order, ['a4', 'a5', 'a6']);
    (await a6)!.release();
    assert.equal(gate.active, 0);
    assert.equal(gate.waiting, 0);
  });

  it('lets nobody ride while another key waits for a slot, and asks for the riders back when every slot is in use', async () => {
    const withdrawn: number[] = [];
    const gate = new FairGate(2, 1, 10, { depth: 4, withdraw: (slot) => withdrawn.push(slot) });
    const a1 = (await gate.acquire('a', 'x'))!;
    const a2 = (await gate.acquire('a', 'x'))!;
    const b1 = (await gate.acquire('b', 'x'))!;
    const b2 = (await gate.acquire('b', 'x'))!;
    assert.deepEqual([a2.slot, b2.slot], [a1.slot, b1.slot]);
    assert.deepEqual(withdrawn, []);

    const order: string[] = [];
    const c1 = track(order, 'c1', gate.acquire('c', 'x'));
    assert.deepEqual(withdrawn.sort(), [a1.slot, b1.slot].sort(), 'c waits with every slot in use: both slots\' riders are asked back');
    const a3 = track(order, 'a3', gate.acquire('a', 'x'));
    await tick();
    assert.deepEqual(order, [], 'a may not ride while c waits');

    // The sandbox process gave a2 and b2 back unstarted: they wait here again, first of their key.
    a2.release();
    b2.release();
    const a2again = track(order, 'a2', gate.acquire('a', 'x', { requeue: true }));
    const b2again = track(order, 'b2', gate.acquire('b', 'x', { requeue: true }));
    assert.equal(gate.waiting, 4);

    a1.release();
    await tick();
    assert.deepEqual(order, ['c1'], 'the slot a1 freed goes to c, in turn');
    b1.release();
    await tick();
    assert.deepEqual(order, ['c1', 'a2'], 'then to a, whose given-back run goes first');
    (await c1)!.release();
    await tick();
    assert.deepEqual(order, ['c1', 'a2', 'b2']);
    (await a2again)!.release();
    await tick();
    assert.deepEqual(order, ['c1', 'a2', 'b2', 'a3']);
    (await a3)!.release();
    (await b2again)!.release();
    assert.equal(gate.active, 0);
    assert.equal(gate.waiting, 0);
  });
});

/** An SDK whose `enter` records who entered and then waits until that name's gate opens. */
function gates() {
  const entered: string[] = [];
  const open = new Map<string, () => void>();
  const opened = new Map<string, Promise<void>>();
  const gateOf = (name: string) => {
    if (!opened.has(name)) opened.set(name, new Promise<void>((r) => open.set(name, r)));
    return opened.get(name)!;
  };
  const sdk: SdkHost = {
    enter: async (who: unknown, gate: unknown) => {
      entered.push(String(who));
      await gateOf(String(gate));
      return String(who);
    },
  };
  return { entered, sdk, open: (name: string) => (gateOf(name), open.get(name)!()) };
}

const ENTER = `module.exports = async (req) => ({ raw: await req.bt.enter(req.args.who, req.args.gate) });`;

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), `timed out waiting for ${what}`);
}

describe('runs riding a slot, in sandbox processes', () => {
  it('run one after another, each with its own time limit, whatever the run before did', async () => {
    const sb = new Sandbox({ concurrency: 2, tenantConcurrency: 1, slotDepth: 4, limits: { timeoutMs: 400 } });
    try {
      const g = gates();
      const code = `module.exports = async (req) => {
        if (req.args.loop) for (;;);
        return { raw: await req.bt.enter(req.args.who, req.args.gate) };
      };`;
      const run = (args: Record<string, unknown>) => sb.run({ tenantId: 't', cacheKey: 'seq', code, req: { args }, sdk: g.sdk });
      const first = run({ who: 'r1', gate: 'g1' });
      await until(() => g.entered.length === 1, 'the first run to enter');
      const looping = run({ loop: true });
      const third = run({ who: 'r3', gate: 'open' });
      g.open('open');
      await new Promise((r) => setTimeout(r, 200));
      assert.deepEqual(g.entered, ['r1'], 'the riders wait behind the run in progress');
      assert.deepEqual(sb.runs, { active: 1, waiting: 2 });
      const released = performance.now();
      g.open('g1');
      assert.deepEqual((await first).ok && (await first as { value: unknown }).value, { raw: 'r1' });
      const loop = await looping;
      assert.equal(!loop.ok && loop.error.kind, 'timeout', JSON.stringify(loop));
      const last = await third;
      assert.deepEqual(last.ok && last.value, { raw: 'r3' }, 'the run behind the one that timed out ran in full');
      assert.ok(performance.now() - released >= 390, 'the loop had its whole time limit');
      assert.deepEqual(g.entered, ['r1', 'r3']);
    } finally {
      await sb.dispose();
    }
  });

  it('are given back when another tenant waits with every slot in use: it runs before them', async () => {
    const sb = new Sandbox({ concurrency: 2, tenantConcurrency: 1, slotDepth: 4 });
    try {
      const g = gates();
      const run = (tenantId: string, who: string, gate: string) => sb.run({ tenantId, cacheKey: 'enter', code: ENTER, req: { args: { who, gate } }, sdk: g.sdk });
      const a = [run('a', 'a1', 'a'), run('a', 'a2', 'open'), run('a', 'a3', 'open')];
      const b = run('b', 'b1', 'b');
      g.open('open');
      await until(() => g.entered.length === 2, 'a1 and b1 to enter');
      assert.deepEqual(sb.runs, { active: 2, waiting: 2 });
      const c = run('c', 'c1', 'open');
      // Let the withdrawal reach the sandbox process and come back before a1 ends.
      await until(() => sb.runs.active === 2 && sb.runs.waiting === 3, 'c and the given-back riders to wait');
      await new Promise((r) => setTimeout(r, 100));
      g.open('a');
      for (const r of [...(await Promise.all(a)), await c]) assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual([...g.entered.slice(0, 2).sort(), ...g.entered.slice(2)], ['a1', 'b1', 'c1', 'a2', 'a3'], 'c ran next, before the riders behind a1; each ran once');
      g.open('b');
      assert.ok((await b).ok);
    } finally {
      await sb.dispose();
    }
  });
});
