/**
 * A sandbox process: runs user code for the API process that forked it, in the isolates of
 * its own engine (../isolates.ts). Whatever user code does to this process — V8 aborting it
 * on an out-of-memory no isolate limit caught, say — the API process sees only its exit
 * (./host.ts). What the code asks of its host (an SDK method, a fetch) goes back over IPC.
 */
import { IsolateSandbox } from '../isolates.ts';
import type { FetchBridge, FetchRequest, FetchResponse, SdkHost } from '../types.ts';
import { isolateHeapDefaults } from './heap-flags.ts';
import { Outbox, unbatch, type Batch } from './outbox.ts';
import type { CallFailure, CallMessage, ChildOptions, FromChild, RunMessage, ToChild } from './protocol.ts';

isolateHeapDefaults();
const options = JSON.parse(process.argv[2] ?? '{}') as ChildOptions;
const engine = new IsolateSandbox(options);

type Pending = { resolve: (json: string | undefined) => void; reject: (err: unknown) => void };
const pending = new Map<string, Pending>();
let nextCall = 0;

const outbox = new Outbox<FromChild>((message) => {
  // Nothing to send to once the API process is gone; this process ends with its channel.
  if (process.connected) process.send!(message);
});

function send(message: FromChild): void {
  outbox.push(message);
}

/** Asks the API process; settles with the value's JSON, or rejects with the failure as exposeError reads it. */
function ask(run: number, body: Pick<CallMessage, 'kind'> & Record<string, unknown>): Promise<string | undefined> {
  const call = ++nextCall;
  return new Promise((resolve, reject) => {
    pending.set(`${run}:${call}`, { resolve, reject });
    send({ t: 'call', run, call, ...body } as CallMessage);
  });
}

function remoteSdk(run: number, methods: string[]): SdkHost {
  const sdk: SdkHost = {};
  for (const method of methods) {
    sdk[method] = async (...args) => {
      const json = await ask(run, { kind: 'sdk', method, args });
      return json === undefined ? undefined : JSON.parse(json);
    };
  }
  return sdk;
}

function remoteFetch(run: number): FetchBridge {
  return async (request: FetchRequest) => JSON.parse((await ask(run, { kind: 'fetch', request })) ?? 'null') as FetchResponse;
}

/** An error shaped like the host's, for exposeError to read as it would read the original. */
function hostError(f: CallFailure): Error {
  return Object.assign(new Error(f.message ?? ''), f);
}

async function start(m: RunMessage): Promise<void> {
  const result = await engine.run({
    tenantId: m.tenantId,
    cacheKey: m.cacheKey,
    code: m.code,
    req: m.req,
    limits: m.limits,
    sdk: m.sdk ? remoteSdk(m.run, m.sdk) : undefined,
    fetch: m.fetch ? remoteFetch(m.run) : undefined,
  });
  // Replies still owed to a finished run are dropped when they come.
  for (const key of pending.keys()) if (key.startsWith(`${m.run}:`)) pending.delete(key);
  send({ t: 'done', run: m.run, result, stats: { warmIsolates: engine.warmIsolates, warmBytes: engine.warmBytes } });
}

/** Each slot's runs not yet started, in the order sent, and whether one of its runs is running. */
const slots = new Map<number, { queue: RunMessage[]; running: boolean }>();

/** Starts the slot's next run once the one before has ended: a slot runs one thing at a time. */
function next(slot: number): void {
  const s = slots.get(slot);
  if (!s || s.running) return;
  const m = s.queue.shift();
  if (!m) {
    slots.delete(slot);
    return;
  }
  s.running = true;
  void start(m).finally(() => {
    s.running = false;
    next(slot);
  });
}

/** Answers the slot's runs not yet started as withdrawn; its run in progress goes on (a slot is kept only while one runs). */
function withdraw(slot: number): void {
  for (const m of slots.get(slot)?.queue.splice(0) ?? []) send({ t: 'withdrawn', run: m.run });
}

process.on('message', (m: ToChild | Batch<ToChild>) => {
  for (const message of unbatch(m)) receive(message);
});

function receive(message: ToChild): void {
  if (message.t === 'run') {
    const s = slots.get(message.slot);
    if (s) s.queue.push(message);
    else slots.set(message.slot, { queue: [message], running: false });
    next(message.slot);
  } else if (message.t === 'withdraw') {
    withdraw(message.slot);
  } else if (message.t === 'reply') {
    const key = `${message.run}:${message.call}`;
    const p = pending.get(key);
    if (!p) return;
    pending.delete(key);
    if (message.ok) p.resolve(message.json);
    else p.reject(hostError(message.error));
  }
}
// The API process is gone (or let this one go): nothing is left to run for.
process.on('disconnect', () => {
  void engine.dispose(1000).finally(() => process.exit(0));
});
send({ t: 'ready' });
