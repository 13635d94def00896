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

function addTimer(callback, delay, args, repeat) {
  if (typeof callback !== 'function') throw new $TypeError('The callback must be a function.');
  if (pendingTimers >= LIMITS.maxTimers) throw new $RangeError(`Too many pending timers: at most ${LIMITS.maxTimers}.`);
  checkTimerBudget();
  // As in Node: a delay that does not fit in 32 bits (Infinity included) becomes 1 ms, not
  // "never" (browsers wrap it round; neither waits for ever). NaN and negative delays are 0.
  const n = $Number(delay);
  const ms = n > 2147483647 ? 1 : $max(0, n || 0);
  const id = nextTimerId++;
  timers[id] = { __proto__: null, callback, args, ms: repeat ? $max(1, ms) : -1 };
  pendingTimers++;
  send('timer', id, ms);
  return id;
}

function setTimeout(callback, delay = 0, ...args) {
  return addTimer(callback, delay, args, false);
}

function setInterval(callback, delay = 0, ...args) {
  return addTimer(callback, delay, args, true);
}

function setImmediate(callback, ...args) {
  return addTimer(callback, 0, args, false);
}

function clearTimeout(id) {
  if (typeof id !== 'number' || timers[id] === undefined) return;
  delete timers[id];
  pendingTimers--;
  send('clear', id);
}

function fireTimer(id) {
  const t = timers[id];
  if (t === undefined) return;
  if (t.ms >= 0) {
    // An interval: arm it again first, so the callback may clear it.
    try {
      checkTimerBudget();
      send('timer', id, t.ms);
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
    apply(t.callback, undefined, t.args);
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
