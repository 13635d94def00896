// require, the `bt` SDK object, and the calls themselves. The first call in a context runs the
// user script (the user's CommonJS code wrapped in a function), which calls
// __coffer_start(wrapper): the module loads, and its exported function is kept. Every call then
// calls that function with its own `req` and reports the outcome to the host exactly once.

const MODULES = create(null);
MODULES['@coffer/errors'] = errorsModule;
MODULES['coffer/errors'] = errorsModule;

function require(name) {
  const id = $String(name);
  const m = MODULES[id];
  if (m !== undefined) return m;
  const err = new $Error(`Cannot find module '${id}': user code can require only '@coffer/errors' (alias 'coffer/errors').`);
  setOwn(err, 'code', 'MODULE_NOT_FOUND');
  throw err;
}

/**
 * `bt`: one method per host SDK method, "tokens.create" becoming bt.tokens.create(...args). A new
 * one for every call; one kept from an earlier call (in module state) refuses to be used.
 *
 * Its shape (sdkTree) is worked out once per list of methods; each call then builds only the
 * objects and functions themselves. Members are added by spreading into a new literal: that
 * defines them, as defineProperty would, so no setter code put on Object.prototype runs, and it
 * keeps the objects in V8's fast mode, where defining on them one by one did not (a few µs of
 * every call).
 */
function makeSdk(methods) {
  if (!$isArray(methods)) return null;
  return freeze(sdkLevel(sdkTree(methods), callNo));
}

/** The members of one level of `bt`: its methods, and its groups (frozen) in the order first named. */
function sdkLevel(level, mine) {
  let obj = {};
  for (let i = 0; i < level.length; i++) {
    const node = level[i];
    const value = node.children !== null ? freeze(sdkLevel(node.children, mine)) : sdkMethod(node.key, node.name, mine);
    obj = { ...obj, [node.key]: value };
  }
  return obj;
}

function sdkMethod(key, name, mine) {
  return {
    [key]: (...args) => {
      if (mine !== callNo) {
        return new $Promise((resolve, reject) => reject(new $Error('This bt belongs to an earlier call: use the bt of the current call (req.bt).')));
      }
      // Arguments JSON cannot hold (a BigInt, a cycle, a throwing toJSON) reject like every
      // other failure of the call, instead of throwing past a `.catch()` the code attached.
      let payload;
      try {
        payload = jsonStringify({ __proto__: null, method: name, args });
      } catch (e) {
        const err = new $TypeError(`The arguments of bt.${name} cannot be sent as JSON: ${describe(e)}`);
        return new $Promise((resolve, reject) => reject(err));
      }
      return hostCall('sdk', payload, apiErrorFromHost);
    },
  }[key];
}

/** The last list of methods seen, and its tree: the host sends the same list with every call. */
let sdkTreeOf = null;
let sdkTreeNodes = null;

/** [{ key, name, children: null } (a method) | { key, name: null, children: [...] } (a group)]. */
function sdkTree(methods) {
  if (sdkTreeOf !== null && sdkTreeOf.length === methods.length) {
    let same = true;
    for (let i = 0; i < methods.length && same; i++) same = sdkTreeOf[i] === methods[i];
    if (same) return sdkTreeNodes;
  }
  const root = [];
  const names = [];
  for (let m = 0; m < methods.length; m++) {
    const name = $String(methods[m]);
    names[m] = name;
    const path = splitDots(name);
    let level = root;
    for (let i = 0; i < path.length - 1; i++) {
      let group = null;
      for (let j = 0; j < level.length && group === null; j++) if (level[j].key === path[i] && level[j].children !== null) group = level[j];
      if (group === null) {
        group = { __proto__: null, key: path[i], name: null, children: [] };
        level[level.length] = group;
      }
      level = group.children;
    }
    level[level.length] = { __proto__: null, key: path[path.length - 1], name, children: null };
  }
  sdkTreeOf = names;
  sdkTreeNodes = root;
  return root;
}

/** "a.b.c" → ['a', 'b', 'c'], without String.prototype.split (which code may have replaced). */
function splitDots(s) {
  const out = [];
  let part = '';
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '.') {
      out[out.length] = part;
      part = '';
    } else {
      part += s[i];
    }
  }
  out[out.length] = part;
  return out;
}

const RUNAWAY = /^(Array buffer allocation failed|Invalid string length|Invalid array length|Invalid typed array length)/;
const regexpExec = RegExp.prototype.exec;
let finished = false;
/** The user's exported function, once the module has loaded in this context; kept for later calls. */
let moduleFn;

/** Reports the call's outcome to the host once; later outcomes (a second failure, say) are ignored. */
function report(outcome, value) {
  if (finished) return;
  finished = true;
  outcome.loaded = moduleFn !== undefined;
  outcome.intlKb = intlLiveKb;
  send('done', jsonStringify(outcome), value);
}

function fail(e) {
  const brand = e !== null && (typeof e === 'object' || typeof e === 'function') ? brands.get(e) : undefined;
  let message = describe(e);
  let kind = brand ? brand.kind : 'user_error';
  let data;
  if (brand) {
    try {
      if (e.data !== undefined) {
        const json = jsonStringify(e.data);
        if (json !== undefined && json.length <= LIMITS.maxIoBytes) data = json;
      }
    } catch {
      // data that cannot be serialized is left out
    }
  } else {
    let name;
    try {
      name = e instanceof $Error ? $String(e.name) : undefined;
    } catch {
      name = undefined;
    }
    if (name === 'RangeError' && apply(regexpExec, RUNAWAY, [message]) !== null) kind = 'memory';
    if (name && name !== 'Error') message = message === '' ? name : `${name}: ${message}`;
  }
  if (message.length > 2000) message = apply($slice, message, [0, 2000]) + '…';
  report({ __proto__: null, ok: false, status: brand ? brand.status : 422, kind, message, data });
}

function succeed(value) {
  let json;
  try {
    json = jsonStringify(value);
  } catch (e) {
    report({ __proto__: null, ok: false, status: 422, kind: 'user_error', message: `The returned value cannot be serialized as JSON: ${describe(e)}` });
    return;
  }
  if (json !== undefined && json.length > LIMITS.maxIoBytes) {
    report({ __proto__: null, ok: false, status: 422, kind: 'too_large', message: `The returned value is larger than ${LIMITS.maxIoBytes} bytes as JSON.` });
    return;
  }
  report({ __proto__: null, ok: true }, json);
}

function invalidCode(message) {
  report({ __proto__: null, ok: false, status: 400, kind: 'invalid_code', message });
}

/** The first call in a context: the user script calls this with the module's wrapper. */
function start(wrapper) {
  delete G.__coffer_start;
  if (typeof wrapper !== 'function' || finished || !armed || moduleFn !== undefined) return;
  const module = { exports: {} };
  try {
    apply(wrapper, module.exports, [module.exports, require, module, '/reactor.js', '/']);
  } catch (e) {
    fail(e);
    return;
  }
  let fn;
  try {
    fn = module.exports;
    if (typeof fn !== 'function' && fn !== null && typeof fn === 'object' && typeof fn.default === 'function') fn = fn.default;
  } catch (e) {
    fail(e);
    return;
  }
  if (typeof fn !== 'function') {
    invalidCode('The code must export a function: module.exports = async function (req) { ... }');
    return;
  }
  moduleFn = fn;
  invoke();
}

/** Calls the exported function with this call's `req`, and reports how it settles. */
function invoke() {
  let req = callReq;
  try {
    if (req === null || typeof req !== 'object') req = {};
    setOwn(req, 'bt', makeSdk(sdkMethods));
  } catch (e) {
    fail(e);
    return;
  }
  let result;
  try {
    result = moduleFn(req);
  } catch (e) {
    fail(e);
    return;
  }
  apply(promiseThen, apply(promiseResolve, $Promise, [result]), [succeed, fail]);
}

defineProperty(G, '__coffer_start', { value: start, configurable: true, writable: false, enumerable: false });
defineGlobal('global', G);

/**
 * The start of a call: every piece of per-call state is new (nothing pending, no console line,
 * no timer, a new random stream, this call's limits and request), then, if the module is
 * already loaded in this context, its function is called. Otherwise the host runs the user
 * script next, which loads the module through start().
 *
 * A loaded module (`go`) means an earlier call ran in this context: it is reset first, in this
 * same task (one trip into the isolate instead of two). 'tainted' when a global could not be
 * put back: nothing of this call has run, and the host runs it again in a fresh context.
 * 'armed' otherwise.
 *
 * Everything comes in one JSON text (see ../execute.ts): { no, go, limits, sdk, seed, req }.
 * Each argument of a task is copied across on its own, so one string costs the host less
 * than five; parsing it builds `req` too, with JSON.parse's own property definitions.
 */
function arm(json) {
  const a = jsonParse(json);
  const go = a.go === true;
  if (go && reset() !== 'ok') return 'tainted';
  for (let i = 0; i < LIMIT_NAMES.length; i++) LIMITS[LIMIT_NAMES[i]] = a.limits[LIMIT_NAMES[i]];
  sdkMethods = a.sdk;
  randomSeed = a.seed;
  callReq = a.req;
  callNo = a.no;
  finished = false;
  resetCalls();
  resetTimers();
  resetConsole();
  resetRandom();
  resetIntl();
  armed = true;
  if (go) {
    if (moduleFn === undefined) report({ __proto__: null, ok: false, status: 500, kind: 'runtime', message: 'The module is not loaded.' });
    else invoke();
  }
  return 'armed';
}

/**
 * Between calls (at the start of the next one, see arm): forget the finished call (its pending
 * calls and timers, its request), and put the runtime's globals back. 'ok', or 'tainted' when a
 * global could not be put back, and this context must not be used again.
 */
function reset() {
  callNo = 0;
  armed = false;
  finished = true;
  callReq = null;
  sdkMethods = null;
  randomSeed = null;
  resetCalls();
  resetTimers();
  resetConsole();
  resetRandom();
  return reinstallGlobals() ? 'ok' : 'tainted';
}

/**
 * The host's way in: arm (and run) a call, settle a call, fire a timer, ask whether the run can
 * still progress, or how much ICU memory this context's Intl objects hold (see intl.js).
 */
function control(command, a, b, c) {
  if (command === 'arm') return arm(a);
  else if (command === 'settle') settleCall(a, b, c);
  else if (command === 'timer') fireTimer(a);
  else if (command === 'poll') return jsonStringify({ __proto__: null, finished, pending: pendingCalls + pendingTimers });
  else if (command === 'intl') return intlLiveKb;
  return undefined;
}

return control;
