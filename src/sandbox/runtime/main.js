// require, the `bt` SDK object, and the run itself: __coffer_start(wrapper) is called by the
// user script (the user's CommonJS code wrapped in a function), loads the module, calls the
// exported function with `req`, and reports the outcome to the host exactly once.

const MODULES = create(null);
MODULES['@coffer/errors'] = errorsModule;
MODULES['coffer/errors'] = errorsModule;

function require(name) {
  const id = $String(name);
  const m = MODULES[id];
  if (m !== undefined) return m;
  const err = new $Error(`Cannot find module '${id}': user code can require only '@coffer/errors' (alias 'coffer/errors').`);
  err.code = 'MODULE_NOT_FOUND';
  throw err;
}

/** `bt`: one method per host SDK method, "tokens.create" becoming bt.tokens.create(...args). */
function makeSdk(methods) {
  if (!Array.isArray(methods)) return null;
  const root = create(null);
  const groups = [];
  for (const name of methods) {
    const path = $String(name).split('.');
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      if (node[path[i]] === undefined) {
        node[path[i]] = {};
        groups.push(node[path[i]]);
      }
      node = node[path[i]];
    }
    node[path[path.length - 1]] = {
      [path[path.length - 1]]: (...args) => hostCall('sdk', jsonStringify({ method: name, args }), apiErrorFromHost),
    }[path[path.length - 1]];
  }
  for (const g of groups) freeze(g);
  return freeze({ ...root });
}

const RUNAWAY = /^(Array buffer allocation failed|Invalid string length|Invalid array length|Invalid typed array length)/;
let finished = false;

/** Reports the outcome to the host once; later outcomes (a second failure, say) are ignored. */
function report(outcome, value) {
  if (finished) return;
  finished = true;
  H('done', jsonStringify(outcome), value);
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
    if (name === 'RangeError' && RUNAWAY.test(message)) kind = 'memory';
    if (name && name !== 'Error') message = `${name}: ${message}`;
  }
  if (message.length > 2000) message = message.slice(0, 2000) + '…';
  report({ ok: false, status: brand ? brand.status : 422, kind, message, data });
}

function succeed(value) {
  let json;
  try {
    json = jsonStringify(value);
  } catch (e) {
    report({ ok: false, status: 422, kind: 'user_error', message: `The returned value cannot be serialized as JSON: ${describe(e)}` });
    return;
  }
  if (json !== undefined && json.length > LIMITS.maxIoBytes) {
    report({ ok: false, status: 422, kind: 'too_large', message: `The returned value is larger than ${LIMITS.maxIoBytes} bytes as JSON.` });
    return;
  }
  report({ ok: true }, json);
}

function invalidCode(message) {
  report({ ok: false, status: 400, kind: 'invalid_code', message });
}

function start(wrapper) {
  delete G.__coffer_start;
  if (typeof wrapper !== 'function' || finished || !armed) return;
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
  let req;
  try {
    req = jsonParse(reqJson);
    if (req === null || typeof req !== 'object') req = {};
    req.bt = makeSdk(sdkMethods);
  } catch (e) {
    fail(e);
    return;
  }
  let result;
  try {
    result = fn(req);
  } catch (e) {
    fail(e);
    return;
  }
  apply(promiseThen, apply(promiseResolve, $Promise, [result]), [succeed, fail]);
}

defineProperty(G, '__coffer_start', { value: start, configurable: true, writable: false, enumerable: false });
defineGlobal('global', G);

/** Takes the run's request and limits (once), before the user script starts. */
function arm(armJson, req) {
  if (armed) return;
  const a = jsonParse(armJson);
  for (const k of keys(LIMITS)) LIMITS[k] = a.limits[k];
  sdkMethods = a.sdk;
  randomSeed = a.seed;
  reqJson = req;
  armed = true;
}

/** The host's way in: arm the run, settle a call, fire a timer, or ask whether the run can still progress. */
function control(command, a, b, c) {
  if (command === 'arm') arm(a, b);
  else if (command === 'settle') settleCall(a, b, c);
  else if (command === 'timer') fireTimer(a);
  else if (command === 'poll') return jsonStringify({ finished, pending: pendingCalls + pendingTimers });
  return undefined;
}

return control;
