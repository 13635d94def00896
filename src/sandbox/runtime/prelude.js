// In-isolate runtime, part 1 of the bootstrap (see ../runtime.ts, which wraps these files in
// one strict function `(H) => control`). It is installed once per context, in a fresh context
// prepared ahead of the first run. A context then serves every call of one code version in one
// tenant (the warm semantics of docs/reactors.md): control('arm', …) hands over each call's
// request, limits and random seed, resets every per-call piece of state and, from the second
// call on, first puts the runtime's globals back (reset in main.js). Everything here is plain
// JavaScript inside the isolate: no host object is ever reachable from it. H is the host's
// message port (an ivm Callback in "ignored" mode): arguments are copied out, nothing comes back;
// every message carries the number of the call it belongs to, so the host drops anything sent
// for a call that is over. The host answers through `control` (main.js).
//
// User code runs in this same context, before and between later calls, and may tamper with any
// global or prototype. So every path that runs for the runtime (arm, reset, reporting, console
// capture, timers, host calls, `bt`, the error classes) uses intrinsics captured here, before
// any user code ran, and never iterates with the (replaceable) iterator protocol or reads
// inherited properties. Tampering can only break the same code's own calls: the host re-checks
// everything that crosses the boundary.

const G = globalThis;
delete G.__coffer_port; // how H came in (see ../runtime.ts)
/** Set by control('arm', …) at the start of every call (see limits in ../execute.ts). */
const LIMIT_NAMES = ['maxIoBytes', 'maxConsoleLines', 'maxTimers', 'maxTimersPerRun', 'maxPendingCalls', 'maxCallsPerRun', 'maxIntlKb'];
const LIMITS = { __proto__: null, maxIoBytes: 0, maxConsoleLines: 0, maxTimers: 0, maxTimersPerRun: 0, maxPendingCalls: 0, maxCallsPerRun: 0, maxIntlKb: 0 };
let armed = false;
/** The host's number of the current call (0 between calls): every message to the host carries it. */
let callNo = 0;
/** The current call's request, as the host sent it (parsed by arm). */
let callReq = null;
let sdkMethods = null;
let randomSeed = null;
const apply = Reflect.apply;
const $construct = Reflect.construct;
const { create, defineProperty, freeze, getOwnPropertyNames, getOwnPropertyDescriptor, getPrototypeOf, hasOwn, keys } = Object;
const $JSON = JSON;
const jsonParse = JSON.parse;
const jsonStringify = JSON.stringify;
const $isArray = Array.isArray;
const $isInteger = Number.isInteger;
const $Number = Number;
const $max = Math.max;
// The time a timer is set, as the host's timers count from it (src/sandbox/timer-queue.ts).
const $dateNow = Date.now;
const $min = Math.min;
const $slice = String.prototype.slice;
const $arraySlice = Array.prototype.slice;
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

/**
 * Objects of the runtime's web API classes (Headers, URL, TextEncoder, …): platform objects, in
 * the standards' words, which structuredClone refuses as browsers do, instead of copying them
 * as the plain objects they are made of here.
 */
const platformObjects = privateMap();

function markPlatformObject(obj) {
  platformObjects.set(obj, true);
}

/**
 * Shapes a class as WebIDL shapes an interface: its operations and attributes (static ones
 * too) are enumerable, where a class makes them not, and its toStringTag is a read-only data
 * property of the prototype.
 */
function asWebIDLInterface(C, tag) {
  const proto = C.prototype;
  const members = getOwnPropertyNames(proto);
  for (let i = 0; i < members.length; i++) {
    if (members[i] !== 'constructor') defineProperty(proto, members[i], { __proto__: null, enumerable: true });
  }
  const statics = getOwnPropertyNames(C);
  for (let i = 0; i < statics.length; i++) {
    if (statics[i] !== 'length' && statics[i] !== 'name' && statics[i] !== 'prototype') defineProperty(C, statics[i], { __proto__: null, enumerable: true });
  }
  defineProperty(proto, Symbol.toStringTag, { __proto__: null, value: tag, writable: false, enumerable: false, configurable: true });
}

/** WebIDL's check of a call's arguments: fewer than an operation requires is a TypeError. */
function requireArguments(given, needed, what) {
  if (given < needed) throw new $TypeError(`${what} requires ${needed} argument${needed === 1 ? '' : 's'}, but only ${given} ${given === 1 ? 'was' : 'were'} given.`);
}

const ArrayIteratorPrototype = getPrototypeOf([][Symbol.iterator]());
const IteratorPrototype = getPrototypeOf(ArrayIteratorPrototype);

/**
 * WebIDL's pair iterators ("URLSearchParams Iterator", "Headers Iterator"): every next() reads
 * the object's list as it is then (pairsOf), so entries added or removed while iterating show,
 * as the standard asks. The position and target are kept where code cannot reach them.
 */
function pairIterator(tag, pairsOf) {
  const states = privateMap();
  const proto = create(IteratorPrototype);
  setOwn(proto, 'next', {
    next() {
      const state = states.get(this);
      if (state === undefined) throw new $TypeError(`next() called on an object that is not a ${tag}.`);
      const pairs = pairsOf(state.target);
      if (state.index >= pairs.length) return { value: undefined, done: true };
      const pair = pairs[state.index++];
      return { value: state.kind === 'keys' ? pair[0] : state.kind === 'values' ? pair[1] : [pair[0], pair[1]], done: false };
    },
  }.next);
  defineProperty(proto, Symbol.toStringTag, { __proto__: null, value: tag, writable: false, enumerable: false, configurable: true });
  return (target, kind) => {
    const it = create(proto);
    states.set(it, { __proto__: null, target, kind, index: 0 });
    markPlatformObject(it);
    return it;
  };
}

/** An object in WebIDL's sense: what a dictionary, record or sequence may be made from. */
const isObjectLike = (v) => v !== null && (typeof v === 'object' || typeof v === 'function');

/** A data property defined, not assigned: no setter or read-only property on a prototype is involved. */
function setOwn(obj, key, value, enumerable = true) {
  defineProperty(obj, key, { __proto__: null, value, writable: true, enumerable, configurable: true });
}

/** Sends a message to the host, marked with the current call (see prelude above). */
function send(op, a, b, c) {
  H(callNo, op, a, b, c);
}

// The globals the runtime installs, put back before every later call (see reinstallGlobals).
const installedNames = [];
const installedValues = [];

function defineGlobal(name, value) {
  setOwn(G, name, value, false);
  installedNames[installedNames.length] = name;
  installedValues[installedValues.length] = value;
}

// JSON's own properties (parse, stringify, …) as installed, put back with the binding itself.
const jsonNames = getOwnPropertyNames($JSON);
const jsonDescriptors = [];
for (let i = 0; i < jsonNames.length; i++) jsonDescriptors[i] = { __proto__: null, ...getOwnPropertyDescriptor($JSON, jsonNames[i]) };

/**
 * Whether `name` is still the writable, configurable data property installed with `value`.
 * Only then is it left as it is: redefining a global, even to the same value, costs V8 the
 * code it optimized for the old binding, the runtime's and the user's alike, on every call.
 */
function holds(obj, name, value, enumerable = false) {
  const d = getOwnPropertyDescriptor(obj, name);
  return d !== undefined && hasOwn(d, 'value') && d.value === value && d.writable === true && d.enumerable === enumerable && d.configurable === true;
}

/**
 * Between calls: every global the runtime installed gets its binding back (console a new
 * object), and JSON its binding and methods, whatever the last call did to them. False when
 * one cannot be put back (code made it non-configurable, or froze globalThis): the host then
 * drops this context and the next call gets a fresh one.
 */
function reinstallGlobals() {
  try {
    for (let i = 0; i < installedNames.length; i++) {
      const name = installedNames[i];
      if (name === 'console') setOwn(G, name, makeConsole(), false);
      else if (!holds(G, name, installedValues[i])) setOwn(G, name, installedValues[i], false);
    }
    if (!holds(G, 'JSON', $JSON)) setOwn(G, 'JSON', $JSON, false);
    for (let i = 0; i < jsonNames.length; i++) {
      const want = jsonDescriptors[i];
      if (!holds($JSON, jsonNames[i], want.value, want.enumerable)) defineProperty($JSON, jsonNames[i], want);
    }
    for (let i = 0; i < installedNames.length; i++) {
      if (installedNames[i] !== 'console' && G[installedNames[i]] !== installedValues[i]) return false;
    }
    return G.JSON === $JSON && $JSON.parse === jsonParse && $JSON.stringify === jsonStringify;
  } catch {
    return false;
  }
}

// Nothing reactors need, and each is a way around the isolate's limits: WebAssembly memory is
// reserved outside the heap accounting; shared memory and Atomics.wait can block the thread.
delete G.WebAssembly;
delete G.SharedArrayBuffer;
delete G.Atomics;
delete G.console;

/**
 * ArrayBuffer without resizable buffers: V8 reserves and commits a resizable buffer's memory
 * itself, past the allocator through which the isolate's memory limit counts every other
 * buffer, so a few `new ArrayBuffer(n, { maxByteLength })` could fill the host's memory (or
 * its address space). The option is refused; everything else is the engine's ArrayBuffer, whose
 * prototype instances keep. The engine's own constructor stays out of reach of user code.
 */
const SafeArrayBuffer = {
  ArrayBuffer: function (length, options) {
    if (new.target === undefined) throw new $TypeError("Constructor ArrayBuffer requires 'new'");
    if (options !== null && (typeof options === 'object' || typeof options === 'function') && options.maxByteLength !== undefined) {
      throw new $RangeError('Resizable ArrayBuffers are not available here: maxByteLength cannot be given.');
    }
    return $construct($ArrayBuffer, [length], new.target);
  },
}.ArrayBuffer;
defineProperty(SafeArrayBuffer, 'length', { __proto__: null, value: 1, configurable: true });
defineProperty(SafeArrayBuffer, 'prototype', { __proto__: null, value: $ArrayBuffer.prototype, writable: false, enumerable: false, configurable: false });
defineProperty(SafeArrayBuffer, 'isView', { __proto__: null, value: isView, writable: true, enumerable: false, configurable: true });
defineProperty(SafeArrayBuffer, Symbol.species, { __proto__: null, get: getOwnPropertyDescriptor($ArrayBuffer, Symbol.species).get, enumerable: false, configurable: true });
defineProperty($ArrayBuffer.prototype, 'constructor', { __proto__: null, value: SafeArrayBuffer, writable: true, enumerable: false, configurable: true });
defineGlobal('ArrayBuffer', SafeArrayBuffer);

/**
 * FinalizationRegistry whose cleanup callbacks run only during a run. V8 calls them from a task
 * of its own, which no time limit covers: one looping forever while the isolate waited in the
 * pool kept a CPU busy until the process ended. Outside a run (and once its function settled)
 * they are skipped, which the standard allows (a callback is never guaranteed to be called).
 */
const $FinalizationRegistry = FinalizationRegistry;
const SafeFinalizationRegistry = {
  FinalizationRegistry: function (cleanup) {
    if (new.target === undefined) throw new $TypeError("Constructor FinalizationRegistry requires 'new'");
    if (typeof cleanup !== 'function') throw new $TypeError('FinalizationRegistry: cleanup must be callable');
    const gated = (held) => {
      if (armed && !finished) apply(cleanup, undefined, [held]);
    };
    return $construct($FinalizationRegistry, [gated], new.target);
  },
}.FinalizationRegistry;
defineProperty(SafeFinalizationRegistry, 'length', { __proto__: null, value: 1, configurable: true });
defineProperty(SafeFinalizationRegistry, 'prototype', { __proto__: null, value: $FinalizationRegistry.prototype, writable: false, enumerable: false, configurable: false });
defineProperty($FinalizationRegistry.prototype, 'constructor', { __proto__: null, value: SafeFinalizationRegistry, writable: true, enumerable: false, configurable: true });
defineGlobal('FinalizationRegistry', SafeFinalizationRegistry);

/**
 * Proxy, with each proxy user code makes remembered: nothing else tells a proxy from its target,
 * and structuredClone refuses one, as the standard says, rather than copy what its traps show.
 * A proxy of the engine's constructor forwards all else to it (`new` required, no `prototype`,
 * its name and length); `revocable` on it is replaced by one that remembers as well. The handler
 * has no prototype, so nothing added to Object.prototype becomes one of its traps.
 */
const userProxies = privateMap();
const $Proxy = Proxy;
const $proxyRevocable = Proxy.revocable;
const SafeProxyRevocable = {
  revocable(target, handler) {
    const made = apply($proxyRevocable, $Proxy, [target, handler]);
    userProxies.set(made.proxy, true);
    return made;
  },
}.revocable;
defineProperty($Proxy, 'revocable', { __proto__: null, value: SafeProxyRevocable, writable: true, enumerable: false, configurable: true });
const SafeProxy = new $Proxy($Proxy, {
  __proto__: null,
  construct(target, args, newTarget) {
    const made = $construct(target, args, newTarget);
    userProxies.set(made, true);
    return made;
  },
});
defineGlobal('Proxy', SafeProxy);

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

// Ids keep growing across calls, so a reply meant for an earlier call can never match a new one.
let nextCallId = 1;
let pendingCalls = 0;
let totalCalls = 0;
let waiting = create(null);

/** A new call: calls of the last one are forgotten (their replies are dropped by the host anyway). */
function resetCalls() {
  waiting = create(null);
  pendingCalls = 0;
  totalCalls = 0;
}

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
    send('call', id, kind, payload);
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
