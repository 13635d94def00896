// setTimeout / clearTimeout backed by host timers (at most LIMITS.maxTimers pending at once,
// LIMITS.maxTimersPerRun in all), and queueMicrotask. Timers still pending when the run's function settles never fire;
// a new call starts with none (resetTimers), and ids keep growing across calls, so a timer of an earlier call can never fire in a later one.

let nextTimerId = 1;
let pendingTimers = 0;
let totalTimers = 0;
let timers = create(null);

function resetTimers() {
  timers = create(null);
  pendingTimers = 0;
  totalTimers = 0;
}

function checkTimerBudget() {
  if (totalTimers >= LIMITS.maxTimersPerRun) throw new $RangeError(`Too many timers: at most ${LIMITS.maxTimersPerRun} per run.`);
  totalTimers++;
}

const $eval = eval;

/**
 * The HTML standard's timer steps: a handler that is not a function is code, evaluated in the
 * global scope when the timer fires (as browsers do; Node throws instead); the delay is a WebIDL
 * long (NaN and Infinity are 0, 2 ** 32 + 5 is 5, 2 ** 31 wraps to a negative number), and a
 * negative one is 0.
 */
function addTimer(handler, delay, args, repeat) {
  let callback = handler;
  if (typeof handler !== 'function') {
    const code = toDOMString(handler);
    callback = () => $eval(code);
  }
  const ms = $max(0, delay | 0);
  if (pendingTimers >= LIMITS.maxTimers) throw new $RangeError(`Too many pending timers: at most ${LIMITS.maxTimers}.`);
  checkTimerBudget();
  const id = nextTimerId++;
  timers[id] = { __proto__: null, callback, args, ms: repeat ? $max(1, ms) : -1 };
  pendingTimers++;
  send('timer', id, ms, $dateNow());
  return id;
}

// (handler, timeout = 0, ...arguments), with a length of 1 as WebIDL gives them.
function setTimeout(handler, ...rest) {
  return addTimer(handler, rest[0], apply($arraySlice, rest, [1]), false);
}

function setInterval(handler, ...rest) {
  return addTimer(handler, rest[0], apply($arraySlice, rest, [1]), true);
}

/** Node's, not a standard's: it takes only a function. */
function setImmediate(callback, ...args) {
  if (typeof callback !== 'function') throw new $TypeError('The callback must be a function.');
  return addTimer(callback, 0, args, false);
}

/** The id is a WebIDL long, as in browsers: '7' and 7.5 are timer 7; one that is no timer of this call is ignored. */
function clearTimeout(id = 0) {
  const key = id | 0;
  if (timers[key] === undefined) return;
  delete timers[key];
  pendingTimers--;
  send('clear', key);
}

function fireTimer(id) {
  const t = timers[id];
  if (t === undefined) return;
  if (t.ms >= 0) {
    // An interval: arm it again first, so the callback may clear it.
    try {
      checkTimerBudget();
      send('timer', id, t.ms, $dateNow());
    } catch (e) {
      delete timers[id];
      pendingTimers--;
      fail(e);
      return;
    }
  } else {
    delete timers[id];
    pendingTimers--;
  }
  // An exception thrown by a timer callback is uncaught: it ends the run, as it would end Node.
  try {
    apply(t.callback, G, t.args); // `this` is the global object, as the HTML standard calls timer handlers
  } catch (e) {
    fail(e);
  }
}

function queueMicrotask(callback) {
  if (typeof callback !== 'function') throw new $TypeError('The callback must be a function.');
  apply(promiseThen, apply(promiseResolve, $Promise, []), [() => callback()]);
}

defineGlobal('setTimeout', setTimeout);
defineGlobal('clearTimeout', clearTimeout);
defineGlobal('setInterval', setInterval);
defineGlobal('clearInterval', clearTimeout);
defineGlobal('setImmediate', setImmediate);
defineGlobal('clearImmediate', clearTimeout);
defineGlobal('queueMicrotask', queueMicrotask);
