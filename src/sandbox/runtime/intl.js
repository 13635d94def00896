// Intl with bounded ICU memory. The memory limit of an isolate counts its heap and array
// buffers, not the ICU objects behind Intl: a DateTimeFormat is ~200 bytes of heap and ~28 KB
// of the host's memory (~80 KB once formatRange was used), and 200,000 of them kept alive in a
// 32 MB isolate held 5 GB of the host. So every way user code can make one is counted here:
//
// - creations per run (INTL_RUN_MAX): every Intl object made (constructors, Segmenter's
//   segments and their iterators, Locale's maximize/minimize) and every toLocaleString-style
//   call that makes a formatter of its own. Past it, each such call is a RangeError thrown
//   before anything is made, so a loop catching the error cannot go on allocating.
// - ICU memory held at once by the objects of this context (LIMITS.maxIntlKb, which the host
//   derives from the isolate's memory limit, see intlBudgetKb in ../memory-accounting.ts), an estimate per
//   object (INTL_KB, measured on Node 24; a Segments object and its iterators copy their
//   text, 2 bytes per code unit). An object gives its share back once the garbage collector
//   has collected it (the runtime's own FinalizationRegistry, whose callback only does
//   arithmetic, so it may run between runs). Until then it counts: objects dropped in one
//   synchronous stretch of code count until the next task, which over-estimates, safely.
//   Only a full collection frees a registered object, so the host also reads the figure
//   (control('intl'), and intlKb in each run's report) and replaces an isolate whose
//   contexts hold much of it (../execute.ts, ../memory-accounting.ts).
//
// toLocaleString, toLocaleDateString, toLocaleTimeString (Date), toLocaleString (Number,
// BigInt, and through them Array's and typed arrays') and localeCompare with locales or options
// made a new ICU formatter on every call. They now take one from a small cache keyed by
// (method, locales, options), when the arguments are plain enough to make a key from safely
// (undefined, strings, arrays of strings; options a plain object of primitive data
// properties): formatting 10,000 dates in a loop makes one formatter. Anything else (options
// with getters, object values, a Proxy prototype…) calls the engine's method as before, and
// counts against the per-run cap. Calls without locales and options use V8's own cache and
// are not counted. The originals stay in this closure: user code never reaches them.

const INTL_RUN_MAX = 10_000;
/** Host memory per object, in KB, rounded up from measurements (ICU's share, not the heap's). */
const INTL_KB = {
  __proto__: null,
  DateTimeFormat: 32,
  NumberFormat: 4,
  Collator: 4,
  PluralRules: 4,
  RelativeTimeFormat: 12,
  ListFormat: 2,
  DisplayNames: 2,
  Segmenter: 6,
  Locale: 2,
  DurationFormat: 4,
};
/** What a DateTimeFormat grows by on its first formatRange / formatRangeToParts. */
const INTL_RANGE_KB = 56;
/** Segments objects and their iterators: a fixed part, plus a copy of the text. */
const INTL_SEGMENTS_KB = 3;
const INTL_CACHE_MAX = 64;
const INTL_KEY_CHARS = 128;

const $Intl = G.Intl;
const $ownKeys = Reflect.ownKeys;
const $ObjectPrototype = Object.prototype;
const $ArrayPrototype = Array.prototype;
const $ceil = Math.ceil;
const intlMap = Map;
const intlMapGet = Map.prototype.get;
const intlMapSet = Map.prototype.set;
const intlMapDelete = Map.prototype.delete;
const intlMapKeys = Map.prototype.keys;
const intlMapSize = getOwnPropertyDescriptor(Map.prototype, 'size').get;
const intlMapIterNext = getPrototypeOf(new Map().keys()).next;
const intlRegister = $FinalizationRegistry.prototype.register;

let intlRunCount = 0;
let intlLiveKb = 0;
/** Credits an object's share once it is collected. Runtime code only, so it may run at any time. */
const intlRegistry = new $FinalizationRegistry((held) => {
  intlLiveKb -= held.kb;
});
/** Every object counted here → its record { kb, ranged, textKb }. */
const intlHeld = privateMap();

/** A new run: its creations start from zero (what is held stays held). */
function resetIntl() {
  intlRunCount = 0;
}

function intlChargeRun() {
  if (intlRunCount >= INTL_RUN_MAX) {
    throw new $RangeError(`Intl objects: at most ${INTL_RUN_MAX} per run (each Intl object made and each toLocaleString or localeCompare call that needs a formatter of its own counts); reuse formatters instead of making new ones.`);
  }
  intlRunCount++;
}

function intlCheckLive(kb) {
  if (intlLiveKb + kb > LIMITS.maxIntlKb) {
    throw new $RangeError(
      `Intl objects: at most ${LIMITS.maxIntlKb / 1024} MB of ICU memory (estimated) held at once in an isolate; objects count until they are garbage-collected, so keep and reuse formatters instead of making one per item.`,
    );
  }
}

function intlTrack(obj, kb, textKb) {
  const held = { __proto__: null, kb, ranged: false, textKb };
  intlLiveKb += kb;
  apply(intlRegister, intlRegistry, [obj, held]);
  intlHeld.set(obj, held);
}

/** Makes an object of `$C` after charging it; `newTarget` undefined: called without new. */
function intlCreate($C, args, newTarget, thisArg, kb) {
  intlChargeRun();
  intlCheckLive(kb);
  const obj = newTarget === undefined ? apply($C, thisArg, args) : $construct($C, args, newTarget);
  intlTrack(obj, kb, 0);
  return obj;
}

/** Puts `value` as `obj[key]`, keeping the property's attributes. */
function intlReplace(obj, key, value) {
  const d = getOwnPropertyDescriptor(obj, key);
  defineProperty(obj, key, { __proto__: null, value, writable: d.writable, enumerable: d.enumerable, configurable: d.configurable });
}

/** A method wrapper with the original's length (its name comes from how it was written). */
function intlMethod(obj, key, wrapper) {
  defineProperty(wrapper, 'length', { __proto__: null, value: obj[key].length, configurable: true });
  intlReplace(obj, key, wrapper);
}

// ---- the constructors ------------------------------------------------------------------------

const INTL_CALLABLE = { __proto__: null, DateTimeFormat: true, NumberFormat: true, Collator: true };
const intlOriginal = create(null);

function wrapIntlConstructor(name) {
  const $C = $Intl[name];
  if (typeof $C !== 'function') return;
  intlOriginal[name] = $C;
  const kb = INTL_KB[name];
  const callable = INTL_CALLABLE[name] === true;
  const W = {
    [name]: function (...args) {
      // Not callable without new: the engine throws its own TypeError, having made nothing.
      if (new.target === undefined && !callable) return apply($C, this, args);
      return intlCreate($C, args, new.target, this, kb);
    },
  }[name];
  defineProperty(W, 'length', { __proto__: null, value: $C.length, configurable: true });
  defineProperty(W, 'prototype', { __proto__: null, value: $C.prototype, writable: false, enumerable: false, configurable: false });
  const statics = getOwnPropertyNames($C);
  for (let i = 0; i < statics.length; i++) {
    const s = statics[i];
    if (s !== 'length' && s !== 'name' && s !== 'prototype') defineProperty(W, s, getOwnPropertyDescriptor($C, s));
  }
  defineProperty($C.prototype, 'constructor', { __proto__: null, value: W, writable: true, enumerable: false, configurable: true });
  intlReplace($Intl, name, W);
}

// V8's pre-standard break iterator (a text copy and an ICU iterator each): Node has none either.
delete $Intl.v8BreakIterator;

const intlNames = keys(INTL_KB);
for (let i = 0; i < intlNames.length; i++) wrapIntlConstructor(intlNames[i]);

// A DateTimeFormat's first formatRange makes an interval formatter that stays with it.
const $DateTimeFormat = intlOriginal.DateTimeFormat;
const dtfProto = $DateTimeFormat.prototype;
function intlChargeRange(obj) {
  const held = intlHeld.get(obj);
  if (held === undefined || held.ranged) return;
  intlCheckLive(INTL_RANGE_KB);
  held.ranged = true;
  held.kb += INTL_RANGE_KB;
  intlLiveKb += INTL_RANGE_KB;
}
const $formatRange = dtfProto.formatRange;
const $formatRangeToParts = dtfProto.formatRangeToParts;
intlMethod(dtfProto, 'formatRange', {
  formatRange(startDate, endDate) {
    intlChargeRange(this);
    return apply($formatRange, this, [startDate, endDate]);
  },
}.formatRange);
intlMethod(dtfProto, 'formatRangeToParts', {
  formatRangeToParts(startDate, endDate) {
    intlChargeRange(this);
    return apply($formatRangeToParts, this, [startDate, endDate]);
  },
}.formatRangeToParts);

// Segmenter: a Segments object and each of its iterators hold a copy of the text.
const $Segmenter = intlOriginal.Segmenter;
if ($Segmenter !== undefined) {
  const segmenterProto = $Segmenter.prototype;
  const $segment = segmenterProto.segment;
  const $segmenterOptions = segmenterProto.resolvedOptions;
  const segmentsProto = getPrototypeOf(apply($segment, new $Segmenter(), ['']));
  const $segmentsIterator = segmentsProto[Symbol.iterator];
  intlMethod(segmenterProto, 'segment', {
    segment(string) {
      let text = string;
      if (typeof text !== 'string') {
        // The engine checks the receiver before converting the text: so does this.
        try {
          apply($segmenterOptions, this, []);
        } catch {
          return apply($segment, this, [string]);
        }
        text = `${string}`;
      }
      const textKb = $ceil(text.length / 512);
      const kb = INTL_SEGMENTS_KB + textKb;
      intlChargeRun();
      intlCheckLive(kb);
      const segments = apply($segment, this, [text]);
      intlTrack(segments, kb, textKb);
      return segments;
    },
  }.segment);
  intlMethod(segmentsProto, Symbol.iterator, {
    [Symbol.iterator]() {
      const held = intlHeld.get(this);
      if (held === undefined) return apply($segmentsIterator, this, []);
      const kb = INTL_SEGMENTS_KB + held.textKb;
      intlChargeRun();
      intlCheckLive(kb);
      const it = apply($segmentsIterator, this, []);
      intlTrack(it, kb, held.textKb);
      return it;
    },
  }[Symbol.iterator]);
}

// Locale: maximize() and minimize() make new Locale objects.
const $Locale = intlOriginal.Locale;
if ($Locale !== undefined) {
  const localeProto = $Locale.prototype;
  const $maximize = localeProto.maximize;
  const $minimize = localeProto.minimize;
  intlMethod(localeProto, 'maximize', {
    maximize() {
      return intlCreate($maximize, [], undefined, this, INTL_KB.Locale);
    },
  }.maximize);
  intlMethod(localeProto, 'minimize', {
    minimize() {
      return intlCreate($minimize, [], undefined, this, INTL_KB.Locale);
    },
  }.minimize);
}

// ---- formatters of the locale-sensitive methods ----------------------------------------------

const $NumberFormat = intlOriginal.NumberFormat;
const $Collator = intlOriginal.Collator;
const dtfFormatGetter = getOwnPropertyDescriptor(dtfProto, 'format').get;
const nfFormatGetter = getOwnPropertyDescriptor($NumberFormat.prototype, 'format').get;
const collatorCompareGetter = getOwnPropertyDescriptor($Collator.prototype, 'compare').get;
/** key → the bound format (or compare) function of a formatter, least recently used first. */
const intlCache = new intlMap();
/** Object.prototype's own names before user code ran: options inherit nothing else. */
const intlProtoNames = create(null);
const intlProtoNameList = getOwnPropertyNames($ObjectPrototype);
for (let i = 0; i < intlProtoNameList.length; i++) intlProtoNames[intlProtoNameList[i]] = true;
const intlProtoNameCount = intlProtoNameList.length;

// What the last intlLocalesKey / intlOptionsKey read: copies, which the formatter is made from.
let intlLocalesCopy;
let intlOptionsCopy;

/** A key for `locales` (undefined, a string, an array of strings), or null. */
function intlLocalesKey(locales) {
  intlLocalesCopy = locales;
  if (locales === undefined) return 'u';
  if (typeof locales === 'string') return locales.length <= INTL_KEY_CHARS ? `s${locales.length}:${locales}` : null;
  if (!$isArray(locales) || getPrototypeOf(locales) !== $ArrayPrototype) return null;
  const ld = getOwnPropertyDescriptor(locales, 'length');
  if (ld === undefined || hasOwn(ld, 'get')) return null;
  const n = ld.value;
  if (!(n <= 8)) return null;
  const copy = [];
  let key = 'a';
  for (let i = 0; i < n; i++) {
    const d = getOwnPropertyDescriptor(locales, i);
    if (d === undefined || hasOwn(d, 'get')) return null;
    const v = d.value;
    if (typeof v !== 'string' || v.length > INTL_KEY_CHARS) return null;
    copy[i] = v;
    key += `${v.length}:${v}`;
  }
  intlLocalesCopy = copy;
  return key;
}

/** Object.prototype as it was: nothing added that options could inherit. */
function intlPlainObjectPrototype() {
  const names = getOwnPropertyNames($ObjectPrototype);
  if (names.length !== intlProtoNameCount) return false;
  for (let i = 0; i < names.length; i++) if (intlProtoNames[names[i]] !== true) return false;
  return true;
}

/** A key for `options` (undefined, or a plain object of primitive data properties), or null. */
function intlOptionsKey(options) {
  intlOptionsCopy = { __proto__: null };
  if (options === undefined) return '';
  if (options === null || typeof options !== 'object') return null;
  const proto = getPrototypeOf(options);
  if (proto !== null && (proto !== $ObjectPrototype || !intlPlainObjectPrototype())) return null;
  const names = $ownKeys(options);
  if (names.length > 32) return null;
  let key = '';
  for (let i = 0; i < names.length; i++) {
    const k = names[i];
    if (typeof k !== 'string') continue; // the engine reads only the options it knows, all strings
    const d = getOwnPropertyDescriptor(options, k);
    if (d === undefined) return null;
    if (hasOwn(d, 'get')) return null;
    const v = d.value;
    const t = typeof v;
    if (t === 'undefined') continue;
    if (k.length > INTL_KEY_CHARS || !(t === 'number' || t === 'boolean' || (t === 'string' && v.length <= INTL_KEY_CHARS))) return null;
    intlOptionsCopy[k] = v;
    const s = `${v}`;
    key += `${k.length}:${k}${t[0]}${s.length}:${s}`;
  }
  return key;
}

const DATE_FIELDS = ['weekday', 'year', 'month', 'day'];
const TIME_FIELDS = ['dayPeriod', 'hour', 'minute', 'second', 'fractionalSecondDigits'];

function intlHasAny(o, fields) {
  for (let i = 0; i < fields.length; i++) if (o[fields[i]] !== undefined) return true;
  return false;
}

/**
 * ECMA-402's defaults of Date's toLocale*String (CreateDateTimeFormat with required/defaults
 * any/all, date/date, time/time), applied to the copy of the options, so that a DateTimeFormat
 * made from it (any/date) formats as the method would. False where the method throws a
 * TypeError (timeStyle for a date, dateStyle for a time): the engine's method then says so.
 */
function intlDateDefaults(o, kind) {
  if (o.dateStyle !== undefined || o.timeStyle !== undefined) {
    return !((kind === 'D' && o.timeStyle !== undefined) || (kind === 'T' && o.dateStyle !== undefined));
  }
  const needDate = kind !== 'T';
  const needTime = kind !== 'D';
  if ((needDate && intlHasAny(o, DATE_FIELDS)) || (needTime && intlHasAny(o, TIME_FIELDS))) return true;
  if (needDate) o.year = o.month = o.day = 'numeric';
  if (needTime) o.hour = o.minute = o.second = 'numeric';
  return true;
}

/**
 * The cached format function for `kind` ('A' toLocaleString, 'D' toLocaleDateString, 'T'
 * toLocaleTimeString, 'N' numbers, 'C' localeCompare), made on a miss (charged like any Intl
 * object); null when no key can be made safely.
 */
function intlFormatter(kind, locales, options) {
  const lk = intlLocalesKey(locales);
  if (lk === null) return null;
  const ok = intlOptionsKey(options);
  if (ok === null) return null;
  const key = `${kind}${lk}|${ok}`;
  const hit = apply(intlMapGet, intlCache, [key]);
  if (hit !== undefined) {
    apply(intlMapDelete, intlCache, [key]);
    apply(intlMapSet, intlCache, [key, hit]);
    return hit;
  }
  let $C = $DateTimeFormat;
  let getter = dtfFormatGetter;
  let kb = INTL_KB.DateTimeFormat;
  if (kind === 'N') {
    $C = $NumberFormat;
    getter = nfFormatGetter;
    kb = INTL_KB.NumberFormat;
  } else if (kind === 'C') {
    $C = $Collator;
    getter = collatorCompareGetter;
    kb = INTL_KB.Collator;
  } else if (!intlDateDefaults(intlOptionsCopy, kind)) {
    return null;
  }
  intlChargeRun();
  intlCheckLive(kb);
  let formatter;
  try {
    formatter = $construct($C, [intlLocalesCopy, intlOptionsCopy], $C);
  } catch {
    return null; // invalid arguments: the method itself throws, with its own message
  }
  intlTrack(formatter, kb, 0);
  const fn = apply(getter, formatter, []);
  apply(intlMapSet, intlCache, [key, fn]);
  if (apply(intlMapSize, intlCache, []) > INTL_CACHE_MAX) {
    apply(intlMapDelete, intlCache, [apply(intlMapIterNext, apply(intlMapKeys, intlCache, []), []).value]);
  }
  return fn;
}

/**
 * The options for a call of the engine's own method: undefined becomes an empty object without
 * prototype, which every one of them reads the same, and which keeps V8 from answering from its
 * one-entry cache (which takes a locale of '' for the default locale).
 */
function intlUncached(options) {
  return options === undefined ? { __proto__: null } : options;
}

const $dateGetTime = Date.prototype.getTime;

function wrapDateMethod(name, kind) {
  const $m = Date.prototype[name];
  intlMethod(Date.prototype, name, {
    [name]() {
      const locales = arguments[0];
      const options = arguments[1];
      if (locales === undefined && options === undefined) return apply($m, this, []);
      let t;
      try {
        t = apply($dateGetTime, this, []);
      } catch {
        return apply($m, this, [locales, options]); // not a Date: the engine's TypeError
      }
      if (t !== t) return 'Invalid Date'; // as the method does, before reading its arguments
      const format = intlFormatter(kind, locales, options);
      if (format !== null) return format(t);
      intlChargeRun();
      return apply($m, this, [locales, intlUncached(options)]);
    },
  }[name]);
}
wrapDateMethod('toLocaleString', 'A');
wrapDateMethod('toLocaleDateString', 'D');
wrapDateMethod('toLocaleTimeString', 'T');

function wrapNumericMethod(proto, type) {
  const $m = proto.toLocaleString;
  const $valueOf = proto.valueOf;
  intlMethod(proto, 'toLocaleString', {
    toLocaleString() {
      const locales = arguments[0];
      const options = arguments[1];
      if (locales === undefined && options === undefined) return apply($m, this, []);
      let x = this;
      if (typeof x !== type) {
        try {
          x = apply($valueOf, this, []);
        } catch {
          return apply($m, this, [locales, options]); // the engine's TypeError
        }
      }
      const format = intlFormatter('N', locales, options);
      if (format !== null) return format(x);
      intlChargeRun();
      return apply($m, this, [locales, intlUncached(options)]);
    },
  }.toLocaleString);
}
wrapNumericMethod(Number.prototype, 'number');
if (typeof BigInt === 'function') wrapNumericMethod(BigInt.prototype, 'bigint');

const $localeCompare = String.prototype.localeCompare;
intlMethod(String.prototype, 'localeCompare', {
  localeCompare(that) {
    const locales = arguments[1];
    const options = arguments[2];
    if (locales === undefined && options === undefined) return apply($localeCompare, this, [that]);
    if (typeof this === 'string' && (that === null || (typeof that !== 'object' && typeof that !== 'function' && typeof that !== 'symbol'))) {
      const s = this;
      const t = `${that}`;
      const compare = intlFormatter('C', locales, options);
      if (compare !== null) return compare(s, t);
    }
    intlChargeRun();
    return apply($localeCompare, this, [that, locales, intlUncached(options)]);
  },
}.localeCompare);
