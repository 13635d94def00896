// structuredClone: the HTML structured clone algorithm (with `transfer` of ArrayBuffers) for the
// types that exist here, told apart by clone-types.js. The one difference from the standard, as
// docs/reactors.md says: a generator or another object whose state only the engine sees (an
// iterator, an Intl formatter) is copied as the plain object it shows, where the standard
// refuses it. A Proxy is refused: the runtime's Proxy remembers every one it makes.

const $Array = Array;
const $Date = Date;
const $RegExp = RegExp;
const $Map = Map;
const $Set = Set;
const $Object = Object;
const mapSet = Map.prototype.set;
const setAdd = Set.prototype.add;
const $iterator = Symbol.iterator;

const ERROR_TYPES = create(null);
for (const E of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) ERROR_TYPES[E.name] = E;

function dataCloneError(what) {
  return new DOMException(`${what} could not be cloned.`, 'DataCloneError');
}

/** A copy of the buffer's bytes; a resizable buffer stays resizable, up to the same maximum. */
function copyBuffer(buffer) {
  if (apply(brand.bufferDetached, buffer, [])) throw dataCloneError('A detached ArrayBuffer');
  const size = apply(brand.bufferLength, buffer, []);
  const copy = apply(brand.bufferResizable, buffer, []) ? new $ArrayBuffer(size, { maxByteLength: apply(brand.bufferMaxLength, buffer, []) }) : new $ArrayBuffer(size);
  new $Uint8Array(copy).set(new $Uint8Array(buffer));
  return copy;
}

/** Own enumerable string-keyed properties, read (getters run) and defined on `out` as data properties. */
function copyProperties(value, out, seen) {
  const names = keys(value);
  for (let i = 0; i < names.length; i++) setOwn(out, names[i], cloneInto(value[names[i]], seen));
  return out;
}

function cloneError(value, seen, remember) {
  const name = value.name;
  const E = (typeof name === 'string' && ERROR_TYPES[name]) || $Error;
  const out = remember(new E());
  const message = getOwnPropertyDescriptor(value, 'message');
  if (message && hasOwn(message, 'value')) setOwn(out, 'message', $String(message.value), false);
  const stack = value.stack;
  if (typeof stack === 'string') setOwn(out, 'stack', stack, false);
  if (hasOwn(value, 'cause')) setOwn(out, 'cause', cloneInto(value.cause, seen), false);
  return out;
}

function cloneInto(value, seen) {
  const type = typeof value;
  if (type === 'symbol') throw dataCloneError('Symbol()');
  if (type === 'function') throw dataCloneError(`function ${value.name || ''}`.trim());
  if (value === null || type !== 'object') return value;
  const known = seen.get(value);
  if (known !== undefined) return known;
  const remember = (copy) => {
    seen.set(value, copy);
    return copy;
  };
  switch (cloneKind(value)) {
    case 'proxy':
      // As V8 names a proxy of an object, without asking the proxy (its traps are user code).
      throw dataCloneError('#<Object>');
    case 'platform':
    case 'uncloneable':
      throw dataCloneError(apply(Object.prototype.toString, value, []));
    case 'array':
      return copyProperties(value, remember(new $Array(value.length)), seen);
    case 'ArrayBuffer':
      return remember(copyBuffer(value));
    case 'TypedArray': {
      const buffer = cloneInto(apply(brand.typedArrayBuffer, value, []), seen);
      const C = TYPED_ARRAYS[apply(brand.typedArrayName, value, [])];
      const offset = apply(brand.typedArrayOffset, value, []);
      const lengthOf = () => {
        apply(brand.typedArrayAt, value, [0]); // throws when the view is out of its buffer's bounds
        return apply(brand.typedArrayLength, value, []);
      };
      const tracking = tracksLength(apply(brand.typedArrayBuffer, value, []), lengthOf, C.BYTES_PER_ELEMENT);
      return remember(tracking ? new C(buffer, offset) : new C(buffer, offset, apply(brand.typedArrayLength, value, [])));
    }
    case 'DataView': {
      const buffer = cloneInto(apply(brand.dataViewBuffer, value, []), seen);
      const offset = apply(brand.dataViewOffset, value, []);
      const tracking = tracksLength(apply(brand.dataViewBuffer, value, []), () => apply(brand.dataViewLength, value, []), 1);
      return remember(tracking ? new DataView(buffer, offset) : new DataView(buffer, offset, apply(brand.dataViewLength, value, [])));
    }
    case 'Date':
      return remember(new $Date(apply(brand.dateTime, value, [])));
    case 'RegExp':
      return remember(new $RegExp(apply(brand.regexpSource, value, []), regexpFlags(value)));
    case 'Number':
      return remember($Object(apply(brand.numberValue, value, [])));
    case 'String':
      return remember($Object(apply(brand.stringValue, value, [])));
    case 'Boolean':
      return remember($Object(apply(brand.booleanValue, value, [])));
    case 'BigInt':
      return remember($Object(apply(brand.bigintValue, value, [])));
    case 'Map': {
      const out = remember(new $Map());
      const entries = []; // taken whole first, as the standard does, then cloned
      apply(brand.mapForEach, value, [(v, k) => { entries[entries.length] = k; entries[entries.length] = v; }]);
      for (let i = 0; i < entries.length; i += 2) apply(mapSet, out, [cloneInto(entries[i], seen), cloneInto(entries[i + 1], seen)]);
      return out;
    }
    case 'Set': {
      const out = remember(new $Set());
      const members = [];
      apply(brand.setForEach, value, [(v) => { members[members.length] = v; }]);
      for (let i = 0; i < members.length; i++) apply(setAdd, out, [cloneInto(members[i], seen)]);
      return out;
    }
    case 'DOMException':
      return remember(new DOMException(value.message, value.name));
    case 'CryptoKey':
      return remember(copyCryptoKey(value));
    case 'Error':
      return cloneError(value, seen, remember);
    default:
      return copyProperties(value, remember({}), seen);
  }
}

const isObject = (v) => v !== null && (typeof v === 'object' || typeof v === 'function');

/** The `transfer` option as WebIDL reads it (a sequence of objects), each checked to be an ArrayBuffer that can move. */
function transferList(options) {
  if (options === undefined || options === null) return [];
  if (!isObject(options)) throw new $TypeError('The options of structuredClone must be an object.');
  const transfer = options.transfer;
  if (transfer === undefined) return [];
  if (!isObject(transfer) || typeof transfer[$iterator] !== 'function') throw new $TypeError('The transfer option must be a sequence of objects.');
  const list = [];
  for (const item of transfer) {
    if (!isObject(item)) throw new $TypeError('The transfer option must be a sequence of objects.');
    list[list.length] = item;
  }
  for (let i = 0; i < list.length; i++) {
    if (!hasBrand(brand.bufferLength, list[i])) throw dataCloneError('Only an ArrayBuffer can be transferred here; this value');
    for (let j = 0; j < i; j++) if (list[j] === list[i]) throw dataCloneError('An ArrayBuffer listed twice in transfer');
    if (apply(brand.bufferDetached, list[i], [])) throw dataCloneError('A detached ArrayBuffer');
  }
  return list;
}

function structuredClone(value, options) {
  if (arguments.length === 0) throw new $TypeError('structuredClone requires 1 argument.');
  const transfer = transferList(options);
  const seen = privateMap();
  // A transferred buffer is copied like any other, and detached only once the whole value has
  // been cloned: a clone that fails part-way leaves every buffer as it was.
  for (let i = 0; i < transfer.length; i++) seen.set(transfer[i], copyBuffer(transfer[i]));
  const out = cloneInto(value, seen);
  for (let i = 0; i < transfer.length; i++) apply(brand.bufferTransfer, transfer[i], []);
  return out;
}

defineGlobal('structuredClone', structuredClone);
