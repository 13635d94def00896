// In-isolate runtime, part 1 of the bootstrap (see ../runtime.ts, which wraps these files in
// one strict function `(H) => control`). It runs in a fresh context, prepared ahead of the
// run; control('arm', …) then hands over the run's request, limits and random seed, and the
// user script starts. Everything here is plain JavaScript inside the isolate: no host object is
// ever reachable from it. H is the host's message port (an ivm Callback in "ignored" mode):
// arguments are copied out, nothing comes back. The host answers through `control` (main.js).
//
// User code runs in this same context afterwards and may tamper with any global or
// prototype, so the paths that run after user code use intrinsics captured here. Tampering
// can only break the user's own run: the host re-checks everything that crosses the boundary.

const G = globalThis;
delete G.__coffer_port; // how H came in (see ../runtime.ts)
/** Set by control('arm', …) just before the run (see limits in ../execute.ts). */
const LIMITS = { maxIoBytes: 0, maxConsoleLines: 0, maxTimers: 0, maxTimersPerRun: 0, maxPendingCalls: 0, maxCallsPerRun: 0 };
let armed = false;
let reqJson = '{}';
let sdkMethods = null;
let randomSeed = '';
const apply = Reflect.apply;
const { create, defineProperty, freeze, getPrototypeOf, hasOwn, keys } = Object;
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;
const $String = String;
const $Promise = Promise;
const $Error = Error;
const $TypeError = TypeError;
const $RangeError = RangeError;
const promiseThen = Promise.prototype.then;
const promiseResolve = Promise.resolve;
const wmGet = WeakMap.prototype.get;
const wmSet = WeakMap.prototype.set;
const wmHas = WeakMap.prototype.has;
const $Uint8Array = Uint8Array;
const $ArrayBuffer = ArrayBuffer;
const isView = ArrayBuffer.isView;

/** A WeakMap whose methods user code cannot replace. */
function privateMap() {
  const m = new WeakMap();
  return {
    get: (k) => apply(wmGet, m, [k]),
    set: (k, v) => apply(wmSet, m, [k, v]),
    has: (k) => apply(wmHas, m, [k]),
  };
}

function defineGlobal(name, value) {
  defineProperty(G, name, { value, writable: true, configurable: true, enumerable: false });
}

// Nothing reactors need, and each is a way around the isolate's limits: WebAssembly memory is
// reserved outside the heap accounting; shared memory and Atomics.wait can block the thread.
delete G.WebAssembly;
delete G.SharedArrayBuffer;
delete G.Atomics;
delete G.console;

/** A user-facing string for any thrown value, never running more than a getter or two. */
function describe(value) {
  try {
    if (value !== null && typeof value === 'object' && typeof value.message === 'string') return value.message;
    return $String(value);
  } catch {
    return 'unknown error';
  }
}

// ---- calls to the host: fetch, SDK methods, WebCrypto ----------------------------------

let nextCallId = 1;
let pendingCalls = 0;
let totalCalls = 0;
const waiting = create(null);

/**
 * Sends `payload` (a string) to the host and returns a promise the host settles through
 * control('settle', …). `toError` turns the host's error object into what user code sees.
 */
function hostCall(kind, payload, toError) {
  return new $Promise((resolve, reject) => {
    if (payload.length > LIMITS.maxIoBytes) {
      reject(tooLarge(`The ${kind} request is larger than ${LIMITS.maxIoBytes} bytes.`));
      return;
    }
    if (pendingCalls >= LIMITS.maxPendingCalls) {
      reject(new $RangeError(`Too many unfinished calls: at most ${LIMITS.maxPendingCalls} fetch, SDK or crypto calls may be pending at once.`));
      return;
    }
    if (totalCalls >= LIMITS.maxCallsPerRun) {
      reject(new $RangeError(`Too many calls: at most ${LIMITS.maxCallsPerRun} fetch, SDK or crypto calls per run.`));
      return;
    }
    totalCalls++;
    const id = nextCallId++;
    waiting[id] = { resolve, reject, toError };
    pendingCalls++;
    H('call', id, kind, payload);
  });
}

function settleCall(id, ok, json) {
  const w = waiting[id];
  if (w === undefined) return;
  delete waiting[id];
  pendingCalls--;
  let value;
  try {
    value = json === undefined ? undefined : jsonParse(json);
  } catch {
    w.reject(new $TypeError('The host sent an unreadable reply.'));
    return;
  }
  if (ok) w.resolve(value);
  else w.reject(w.toError(value === null || typeof value !== 'object' ? {} : value));
}
