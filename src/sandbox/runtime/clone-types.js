// What kind of value structuredClone (clone.js) has in hand, told by the engine's own brand
// checks (a getter or method that throws for anything but its own type), taken before user code
// runs: `instanceof`, `constructor` and Symbol.toStringTag can all be faked, and an
// Object.create(Date.prototype) is a plain object to the standard, not a date.

const getterOf = (proto, name) => getOwnPropertyDescriptor(proto, name).get;
const TypedArrayPrototype = getPrototypeOf($Uint8Array.prototype);

const brand = {
  __proto__: null,
  dateTime: Date.prototype.getTime,
  mapSize: getterOf(Map.prototype, 'size'),
  mapForEach: Map.prototype.forEach,
  setSize: getterOf(Set.prototype, 'size'),
  setForEach: Set.prototype.forEach,
  regexpSource: getterOf(RegExp.prototype, 'source'),
  regexpGlobal: getterOf(RegExp.prototype, 'global'),
  bufferLength: getterOf($ArrayBuffer.prototype, 'byteLength'),
  bufferDetached: getterOf($ArrayBuffer.prototype, 'detached'),
  bufferResizable: getterOf($ArrayBuffer.prototype, 'resizable'),
  bufferMaxLength: getterOf($ArrayBuffer.prototype, 'maxByteLength'),
  bufferResize: $ArrayBuffer.prototype.resize,
  bufferTransfer: $ArrayBuffer.prototype.transfer,
  typedArrayName: getterOf(TypedArrayPrototype, Symbol.toStringTag),
  typedArrayBuffer: getterOf(TypedArrayPrototype, 'buffer'),
  typedArrayOffset: getterOf(TypedArrayPrototype, 'byteOffset'),
  typedArrayLength: getterOf(TypedArrayPrototype, 'length'),
  typedArrayAt: TypedArrayPrototype.at,
  dataViewBuffer: getterOf(DataView.prototype, 'buffer'),
  dataViewOffset: getterOf(DataView.prototype, 'byteOffset'),
  dataViewLength: getterOf(DataView.prototype, 'byteLength'),
  numberValue: Number.prototype.valueOf,
  stringValue: String.prototype.valueOf,
  booleanValue: Boolean.prototype.valueOf,
  bigintValue: BigInt.prototype.valueOf,
  weakMapHas: WeakMap.prototype.has,
  weakSetHas: WeakSet.prototype.has,
  weakRefDeref: WeakRef.prototype.deref,
  registryUnregister: FinalizationRegistry.prototype.unregister,
  isError: typeof $Error.isError === 'function' ? $Error.isError : (v) => v instanceof $Error,
  promiseProto: Promise.prototype,
  isPrototypeOf: Object.prototype.isPrototypeOf,
};

// The flags in the order RegExp.prototype.flags gives them, each read through its own getter.
const REGEXP_FLAGS = [];
for (const [flag, name] of [['d', 'hasIndices'], ['g', 'global'], ['i', 'ignoreCase'], ['m', 'multiline'], ['s', 'dotAll'], ['u', 'unicode'], ['v', 'unicodeSets'], ['y', 'sticky']]) {
  const get = getterOf(RegExp.prototype, name);
  if (get) REGEXP_FLAGS[REGEXP_FLAGS.length] = [flag, get];
}

const TYPED_ARRAYS = create(null);
for (const C of [Int8Array, $Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array]) {
  TYPED_ARRAYS[C.name] = C;
}
if (typeof Float16Array === 'function') TYPED_ARRAYS.Float16Array = Float16Array;

/** True when `fn` accepts `value` as its receiver: the engine's own check of its type. */
function hasBrand(fn, value, args = []) {
  try {
    apply(fn, value, args);
    return true;
  } catch {
    return false;
  }
}

/** RegExp.prototype itself answers undefined (it is an ordinary object); anything else but a RegExp throws. */
function isRegExp(value) {
  try {
    return typeof apply(brand.regexpGlobal, value, []) === 'boolean';
  } catch {
    return false;
  }
}

/** One of the names below, or 'object' for anything else (a plain object, an array, a class instance). */
function cloneKind(value) {
  if (platformObjects.has(value)) return 'platform';
  // Before any brand check: Array.isArray and the rest would answer for the proxy's target.
  if (userProxies.has(value)) return 'proxy';
  if ($isArray(value)) return 'array';
  if (hasBrand(brand.bufferLength, value)) return 'ArrayBuffer';
  if (isView(value)) return apply(brand.typedArrayName, value, []) === undefined ? 'DataView' : 'TypedArray';
  if (hasBrand(brand.dateTime, value)) return 'Date';
  if (hasBrand(brand.mapSize, value)) return 'Map';
  if (hasBrand(brand.setSize, value)) return 'Set';
  if (isRegExp(value)) return 'RegExp';
  if (hasBrand(brand.numberValue, value)) return 'Number';
  if (hasBrand(brand.stringValue, value)) return 'String';
  if (hasBrand(brand.booleanValue, value)) return 'Boolean';
  if (hasBrand(brand.bigintValue, value)) return 'BigInt';
  if (isDOMException(value)) return 'DOMException';
  if (isCryptoKey(value)) return 'CryptoKey';
  if (brand.isError(value)) return 'Error';
  if (
    hasBrand(brand.weakMapHas, value, [{}]) ||
    hasBrand(brand.weakSetHas, value, [{}]) ||
    hasBrand(brand.weakRefDeref, value) ||
    hasBrand(brand.registryUnregister, value, [{}]) ||
    apply(brand.isPrototypeOf, brand.promiseProto, [value])
  ) {
    return 'uncloneable';
  }
  return 'object';
}

/** The regular expression's flags as its own getters report them (a patched `flags` getter is not asked). */
function regexpFlags(re) {
  let flags = '';
  for (let i = 0; i < REGEXP_FLAGS.length; i++) if (apply(REGEXP_FLAGS[i][1], re, [])) flags += REGEXP_FLAGS[i][0];
  return flags;
}

/**
 * Whether a view of a resizable buffer tracks the buffer's length (made without a length): no
 * getter says so, so the buffer is resized by one element and back, which nothing can observe
 * in between (there is no other thread here). Its bytes are restored when it had to shrink.
 */
function tracksLength(buffer, lengthOf, elementSize) {
  if (!apply(brand.bufferResizable, buffer, [])) return false;
  const size = apply(brand.bufferLength, buffer, []);
  const before = lengthOf();
  if (size + elementSize <= apply(brand.bufferMaxLength, buffer, [])) {
    apply(brand.bufferResize, buffer, [size + elementSize]);
    const after = lengthOf();
    apply(brand.bufferResize, buffer, [size]);
    return after !== before;
  }
  if (size < elementSize) return false; // no element ever fits: either way the copy is empty
  const tail = new $Uint8Array(buffer, size - elementSize, elementSize).slice();
  apply(brand.bufferResize, buffer, [size - elementSize]);
  let after;
  try {
    after = lengthOf(); // a view of fixed length that no longer fits throws: it is out of bounds
  } catch {
    after = before;
  }
  apply(brand.bufferResize, buffer, [size]);
  new $Uint8Array(buffer, size - elementSize, elementSize).set(tail);
  return after !== before;
}
