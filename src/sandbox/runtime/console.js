// console.log/info/debug/warn/error/trace/dir (and assert, table, count, time, group and their
// companions, so code written for Node or browsers does not fail on them): each call becomes one line sent to the host,
// which returns the lines with the result and never logs them. warn and error lines start
// with "[warn] " and "[error] ". At most LIMITS.maxConsoleLines lines are sent, then one
// line saying the rest was dropped; each line is cut at MAX_LINE characters. Every call starts
// with a new `console` object (see reinstallGlobals), so replacing console.log lasts one call.

const MAX_LINE = 8192;
let consoleLines = 0;

/** A string inside an inspected value, quoted as Node quotes it: ' unless the string holds one. */
function quoteString(str) {
  let q = "'";
  if (str.includes("'")) {
    if (!str.includes('"')) q = '"';
    else if (!str.includes('`') && !str.includes('${')) q = '`';
  }
  const escaped = str.replace(/[\u0000-\u001f\u007f\\'"`]/g, (c) => {
    if (c !== q && (c === "'" || c === '"' || c === '`')) return c;
    if (c === q || c === '\\') return '\\' + c;
    const named = { '\b': '\\b', '\t': '\\t', '\n': '\\n', '\f': '\\f', '\r': '\\r' }[c];
    return named || '\\x' + c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
  });
  return q + escaped + q;
}

const $objectToString = Object.prototype.toString;
const BOXED = { __proto__: null, Number: Number.prototype.valueOf, String: String.prototype.valueOf, Boolean: Boolean.prototype.valueOf, BigInt: BigInt.prototype.valueOf, Symbol: Symbol.prototype.valueOf };

/** The primitive inside a Number, String, Boolean, BigInt or Symbol object, as { type, value }; undefined for anything else. */
function boxedPrimitive(value) {
  const type = apply($slice, apply($objectToString, value, []), [8, -1]);
  if (BOXED[type] === undefined) return undefined;
  try {
    return { type, value: apply(BOXED[type], value, []) };
  } catch {
    return undefined; // a plain object claiming the tag
  }
}

/**
 * Node's util.inspect, near enough for a log line: nesting shown to depth 2, cycles marked
 * <ref *n> and [Circular *n], strings inside quoted. Everything stays on one line.
 */
function inspect(value, depth, seen, refs) {
  switch (typeof value) {
    case 'string':
      return depth === 0 ? value : quoteString(value);
    case 'undefined':
      return 'undefined';
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return value.toString();
    case 'function': {
      const source = Function.prototype.toString.call(value);
      if (/^class[\s{]/.test(source)) return `[class ${value.name || '(anonymous)'}]`;
      return value.name ? `[Function: ${value.name}]` : '[Function (anonymous)]';
    }
    case 'number':
      return Object.is(value, -0) ? '-0' : $String(value);
    case 'boolean':
      return $String(value);
  }
  if (value === null) return 'null';
  if (seen.includes(value)) {
    if (!refs.has(value)) refs.set(value, refs.size + 1);
    return `[Circular *${refs.get(value)}]`;
  }
  const text = inspectObject(value, depth, seen, refs);
  return refs.has(value) ? `<ref *${refs.get(value)}> ${text}` : text;
}

function inspectObject(value, depth, seen, refs) {
  if (value instanceof $Error) {
    const stack = typeof value.stack === 'string' ? value.stack : `${value.name}: ${value.message}`;
    return depth === 0 ? stack : `[${value.name}: ${value.message}]`;
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  if (value instanceof RegExp) return $String(value);
  if (value instanceof URL || value instanceof URLSearchParams) return `${value[Symbol.toStringTag]} { ${jsonStringify($String(value))} }`;
  const boxed = boxedPrimitive(value);
  if (boxed !== undefined) return `[${boxed.type}: ${inspect(boxed.value, 1, seen, refs)}]`;
  if (depth > 2) return Array.isArray(value) ? '[Array]' : '[Object]';
  const inner = seen.concat([value]);
  const item = (v) => inspect(v, depth + 1, inner, refs);
  if (Array.isArray(value)) {
    const items = value.slice(0, 100).map(item);
    if (value.length > 100) items.push(`... ${value.length - 100} more items`);
    return `[ ${items.join(', ')} ]`.replace('[  ]', '[]');
  }
  if (value instanceof Map) return `Map(${value.size}) { ${Array.from(value, ([k, v]) => `${item(k)} => ${item(v)}`).join(', ')} }`.replace('{  }', '{}');
  if (value instanceof Set) return `Set(${value.size}) { ${Array.from(value, item).join(', ')} }`.replace('{  }', '{}');
  if (isView(value)) return `${value.constructor.name}(${value.length}) [ ${Array.from(value.slice(0, 100)).join(', ')} ]`;
  if (value instanceof Promise) return 'Promise { ... }';
  const ks = keys(value);
  const body = ks.slice(0, 100).map((k) => `${/^[A-Za-z_$][\w$]*$/.test(k) ? k : quoteString(k)}: ${item(value[k])}`);
  if (ks.length > 100) body.push(`... ${ks.length - 100} more properties`);
  for (const sym of Object.getOwnPropertySymbols(value)) {
    if (Object.prototype.propertyIsEnumerable.call(value, sym)) body.push(`${sym.toString()}: ${item(value[sym])}`);
  }
  const proto = getPrototypeOf(value);
  const name = proto === null ? '[Object: null prototype] ' : proto !== Object.prototype && proto.constructor && proto.constructor.name ? proto.constructor.name + ' ' : '';
  return body.length ? `${name}{ ${body.join(', ')} }` : `${name}{}`;
}

const $parseInt = parseInt;
const $parseFloat = parseFloat;

/**
 * The Console standard's formatter: %s is String(arg), %d and %i parseInt(arg, 10), %f
 * parseFloat(arg) (a Symbol is NaN for all three), %o and %O the inspected value, %c is
 * dropped with its argument. Node's own %j (JSON) and %% (a percent sign) are kept.
 */
function formatSpecifiers(args) {
  const target = args[0];
  let next = 1;
  let out = '';
  let i = 0;
  while (i < target.length) {
    const c = target[i];
    const spec = target[i + 1];
    if (c !== '%' || spec === undefined) {
      out += c;
      i++;
      continue;
    }
    if (spec === '%') {
      out += '%';
      i += 2;
      continue;
    }
    if (next >= args.length || !'sdifjoOc'.includes(spec)) {
      out += c;
      i++;
      continue;
    }
    const arg = args[next++];
    if (spec === 's') out += typeof arg === 'symbol' ? arg.toString() : $String(arg);
    else if (spec === 'd' || spec === 'i') out += typeof arg === 'symbol' ? 'NaN' : $String($parseInt(arg, 10));
    else if (spec === 'f') out += typeof arg === 'symbol' ? 'NaN' : $String($parseFloat(arg));
    else if (spec === 'j') out += jsonOrCircular(arg);
    else if (spec === 'o' || spec === 'O') out += inspect(arg, 1, [], new Map());
    i += 2;
  }
  const rest = [out];
  for (let k = next; k < args.length; k++) rest[rest.length] = args[k];
  return rest;
}

function jsonOrCircular(arg) {
  try {
    return $String(jsonStringify(arg));
  } catch (e) {
    if (e instanceof $TypeError && /circular/i.test(describe(e))) return '[Circular]';
    throw e;
  }
}

function formatArgs(given) {
  let args = given;
  if (typeof args[0] === 'string' && args.length > 1) {
    try {
      args = formatSpecifiers(given);
    } catch {
      args = given;
    }
  }
  let out = '';
  for (let i = 0; i < args.length; i++) {
    let text;
    try {
      text = inspect(args[i], 0, [], new Map());
    } catch {
      text = '[unprintable]';
    }
    out += (i ? ' ' : '') + text;
    if (out.length > MAX_LINE) break;
  }
  return out.length > MAX_LINE ? apply($slice, out, [0, MAX_LINE]) + '…' : out;
}

const $now = Date.now;
let counts = create(null);
let timeStarts = create(null);
let groupIndent = '';

function emit(prefix, args) {
  if (consoleLines > LIMITS.maxConsoleLines) return;
  consoleLines++;
  if (consoleLines > LIMITS.maxConsoleLines) {
    send('log', `[console] output truncated: only the first ${LIMITS.maxConsoleLines} lines are kept`);
    return;
  }
  let line;
  try {
    line = formatArgs(args);
  } catch {
    line = '[unprintable]'; // built-ins the code tampered with; the line is still counted and sent
  }
  // The group indentation grows with every group() call: the whole line, indentation
  // included, is cut, so no line the host receives is longer than MAX_LINE and a mark.
  const full = apply($slice, groupIndent, [0, MAX_LINE + 1]) + prefix + line;
  send('log', full.length > MAX_LINE + 1 ? apply($slice, full, [0, MAX_LINE]) + '…' : full);
}

function label(l) {
  return l === undefined ? 'default' : $String(l);
}

function timeLog(l, args, end) {
  const name = label(l);
  const start = timeStarts[name];
  if (start === undefined) {
    emit('[warn] ', [`No such label '${name}' for console.time${end ? 'End' : 'Log'}()`]);
    return;
  }
  if (end) delete timeStarts[name];
  emit('', withFirst(`${name}: ${$now() - start}ms`, args));
}

/** [first, ...rest] without the (replaceable) iterator protocol; `first` undefined leaves `rest` as is. */
function withFirst(first, rest) {
  if (first === undefined) return rest;
  const out = [first];
  for (let i = 0; i < rest.length; i++) out[i + 1] = rest[i];
  return out;
}

/** A new call: no line sent yet, no count, timer or group of an earlier call. */
function resetConsole() {
  consoleLines = 0;
  counts = create(null);
  timeStarts = create(null);
  groupIndent = '';
}

const consoleMethods = freeze({
  __proto__: null,
  log: (...args) => emit('', args),
  info: (...args) => emit('', args),
  debug: (...args) => emit('', args),
  warn: (...args) => emit('[warn] ', args),
  error: (...args) => emit('[error] ', args),
  trace: (...args) => emit('[trace] ', args),
  dir: (value) => emit('', [value]),
  assert: (condition, ...args) => {
    if (condition) return;
    if (typeof args[0] === 'string') args[0] = `Assertion failed: ${args[0]}`;
    emit('[error] ', args.length ? withFirst(typeof args[0] === 'string' ? undefined : 'Assertion failed:', args) : ['Assertion failed']);
  },
  table: (data) => emit('', [data]),
  count: (l) => {
    const name = label(l);
    counts[name] = (counts[name] || 0) + 1;
    emit('', [`${name}: ${counts[name]}`]);
  },
  countReset: (l) => {
    delete counts[label(l)];
  },
  time: (l) => {
    const name = label(l);
    if (timeStarts[name] === undefined) timeStarts[name] = $now();
  },
  timeLog: (l, ...args) => timeLog(l, args, false),
  timeEnd: (l) => timeLog(l, [], true),
  group: (...args) => {
    if (args.length) emit('', args);
    groupIndent += '  ';
  },
  groupEnd: () => {
    groupIndent = apply($slice, groupIndent, [2]);
  },
});

/** A console object of the shared methods; a new one for every call, so code may patch its own. */
function makeConsole() {
  const m = consoleMethods;
  return {
    log: m.log, info: m.info, debug: m.debug, warn: m.warn, error: m.error, trace: m.trace, dir: m.dir,
    assert: m.assert, table: m.table, count: m.count, countReset: m.countReset,
    time: m.time, timeLog: m.timeLog, timeEnd: m.timeEnd,
    group: m.group, groupCollapsed: m.group, groupEnd: m.groupEnd,
  };
}

defineGlobal('console', makeConsole());
