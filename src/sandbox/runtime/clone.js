// structuredClone: the HTML structured clone algorithm for the types that exist here.

const ERROR_TYPES = create(null);
for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) ERROR_TYPES[E.name] = E;

function dataCloneError(what) {
  return new DOMException(`${what} could not be cloned.`, 'DataCloneError');
}

function cloneInto(value, seen) {
  const type = typeof value;
  if (type === 'symbol') throw dataCloneError('Symbol()');
  if (type === 'function') throw dataCloneError(`function ${value.name || ''}`.trim());
  if (value === null || type !== 'object') return value;
  if (seen.has(value)) return seen.get(value);
  const remember = (copy) => {
    seen.set(value, copy);
    return copy;
  };
  if (Array.isArray(value)) {
    const out = remember(new Array(value.length));
    for (const k of keys(value)) out[k] = cloneInto(value[k], seen);
    return out;
  }
  if (value instanceof Date) return remember(new Date(Date.prototype.getTime.call(value)));
  if (value instanceof RegExp) return remember(new RegExp(value.source, value.flags));
  if (value instanceof Boolean) return remember(new Boolean(Boolean.prototype.valueOf.call(value)));
  if (value instanceof Number) return remember(new Number(Number.prototype.valueOf.call(value)));
  if (value instanceof String) return remember(new String(String.prototype.valueOf.call(value)));
  if (value instanceof BigInt) return remember(Object(BigInt.prototype.valueOf.call(value)));
  if (value instanceof $ArrayBuffer) return remember(value.slice(0));
  if (value instanceof DataView) {
    return remember(new DataView(cloneInto(value.buffer, seen), value.byteOffset, value.byteLength));
  }
  if (isView(value)) {
    const C = value.constructor;
    return remember(new C(cloneInto(value.buffer, seen), value.byteOffset, value.length));
  }
  if (value instanceof Map) {
    const out = remember(new Map());
    for (const [k, v] of value) out.set(cloneInto(k, seen), cloneInto(v, seen));
    return out;
  }
  if (value instanceof Set) {
    const out = remember(new Set());
    for (const v of value) out.add(cloneInto(v, seen));
    return out;
  }
  if (value instanceof $Error) {
    const E = ERROR_TYPES[value.name] || Error;
    const out = remember(new E(value.message));
    if (typeof value.stack === 'string') out.stack = value.stack;
    if (hasOwn(value, 'cause')) out.cause = cloneInto(value.cause, seen);
    return out;
  }
  if (value instanceof Promise || value instanceof WeakMap || value instanceof WeakSet || value instanceof WeakRef) {
    throw dataCloneError(Object.prototype.toString.call(value));
  }
  const out = remember({});
  for (const k of keys(value)) out[k] = cloneInto(value[k], seen);
  return out;
}

function structuredClone(value, options) {
  if (arguments.length === 0) throw new $TypeError('structuredClone requires 1 argument.');
  if (options && options.transfer && options.transfer.length) throw dataCloneError('A transfer list');
  return cloneInto(value, new Map());
}

defineGlobal('structuredClone', structuredClone);
