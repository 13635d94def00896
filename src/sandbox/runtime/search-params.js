// URLSearchParams (application/x-www-form-urlencoded), linked to its URL when it is one's
// searchParams: a change on either side shows on the other. Names and values are USVStrings
// (a Symbol is a TypeError, a lone surrogate becomes U+FFFD), as WebIDL converts them.

function formDecode(s) {
  return utf8Decode(percentDecodeBytes(s.replace(/\+/g, ' ')), false);
}

function formEncode(s) {
  let out = '';
  for (const b of utf8Encode(s)) {
    if ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b === 0x2a || b === 0x2d || b === 0x2e || b === 0x5f) {
      out += $String.fromCharCode(b);
    } else if (b === 0x20) {
      out += '+';
    } else {
      out += '%' + HEX[b >> 4] + HEX[b & 15];
    }
  }
  return out;
}

function parseForm(query) {
  const list = [];
  for (const part of query.split('&')) {
    if (part === '') continue;
    const eq = part.indexOf('=');
    list.push(eq < 0 ? [formDecode(part), ''] : [formDecode(part.slice(0, eq)), formDecode(part.slice(eq + 1))]);
  }
  return list;
}


/** WebIDL's sequence<sequence<USVString>>: every pair an iterable object of exactly two strings. */
function listFromPairs(init) {
  const list = [];
  for (const pair of init) {
    if (!isObjectLike(pair) || typeof pair[Symbol.iterator] !== 'function') throw new $TypeError('Each query pair must be an iterable [name, value] tuple.');
    const p = Array.from(pair, toUSVString);
    if (p.length !== 2) throw new $TypeError('Each query pair must be an iterable [name, value] tuple.');
    list.push(p);
  }
  return list;
}

/** WebIDL's record<USVString, USVString>: own enumerable keys, Symbols included (a TypeError). */
function listFromRecord(init) {
  const list = [];
  const at = new Map();
  for (const key of Reflect.ownKeys(init)) {
    const desc = getOwnPropertyDescriptor(init, key);
    if (desc === undefined || !desc.enumerable) continue;
    const name = toUSVString(key);
    const value = toUSVString(init[key]);
    // Two keys that differ only in lone surrogates are one name: the later value wins, in place.
    if (at.has(name)) list[at.get(name)][1] = value;
    else at.set(name, list.push([name, value]) - 1);
  }
  return list;
}

const paramsOwner = privateMap(); // URLSearchParams → the URL it belongs to

// Methods read `this.#list` before anything else: another object as `this` is a TypeError first.
class URLSearchParams {
  #list = [];
  constructor(init = '') {
    markPlatformObject(this);
    if (isObjectLike(init)) {
      const iterate = init[Symbol.iterator];
      if (iterate !== undefined && iterate !== null) {
        if (typeof iterate !== 'function') throw new $TypeError('URLSearchParams: the init’s Symbol.iterator is not a function.');
        this.#list = listFromPairs(init);
      } else {
        this.#list = listFromRecord(init);
      }
    } else {
      const s = toUSVString(init);
      this.#list = parseForm(s.startsWith('?') ? s.slice(1) : s);
    }
  }
  #update() {
    const url = paramsOwner.get(this);
    if (url) urlRecords.get(url).query = this.#list.length ? this.toString() : null;
  }
  /** Used by URL when its query changes. */
  static _reset(params, query) {
    params.#list = query ? parseForm(query) : [];
  }
  static _listOf(params) {
    return params.#list;
  }
  get size() {
    return this.#list.length;
  }
  append(name, value) {
    requireArguments(arguments.length, 2, 'URLSearchParams.append');
    this.#list.push([toUSVString(name), toUSVString(value)]);
    this.#update();
  }
  delete(name, value) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'URLSearchParams.delete');
    name = toUSVString(name);
    if (value !== undefined) value = toUSVString(value);
    this.#list = list.filter(([k, v]) => !(k === name && (value === undefined || v === value)));
    this.#update();
  }
  get(name) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'URLSearchParams.get');
    name = toUSVString(name);
    const e = list.find(([k]) => k === name);
    return e ? e[1] : null;
  }
  getAll(name) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'URLSearchParams.getAll');
    name = toUSVString(name);
    return list.filter(([k]) => k === name).map(([, v]) => v);
  }
  has(name, value) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'URLSearchParams.has');
    name = toUSVString(name);
    if (value !== undefined) value = toUSVString(value);
    return list.some(([k, v]) => k === name && (value === undefined || v === value));
  }
  set(name, value) {
    const list = this.#list;
    requireArguments(arguments.length, 2, 'URLSearchParams.set');
    name = toUSVString(name);
    value = toUSVString(value);
    const i = list.findIndex(([k]) => k === name);
    if (i < 0) {
      list.push([name, value]);
    } else {
      list[i][1] = value;
      this.#list = list.filter(([k], j) => j <= i || k !== name);
    }
    this.#update();
  }
  sort() {
    const indexed = this.#list.map((e, i) => [e, i]);
    indexed.sort(([a, i], [b, j]) => {
      if (a[0] < b[0]) return -1;
      if (a[0] > b[0]) return 1;
      return i - j;
    });
    this.#list = indexed.map(([e]) => e);
    this.#update();
  }
  /** As WebIDL iterates: by position in the list as it is at each step, so changes made by the callback show. */
  forEach(callback, thisArg = undefined) {
    this.#list;
    requireArguments(arguments.length, 1, 'URLSearchParams.forEach');
    if (typeof callback !== 'function') throw new $TypeError('URLSearchParams.forEach: the callback must be a function.');
    for (let i = 0; i < this.#list.length; i++) {
      const [k, v] = this.#list[i];
      apply(callback, thisArg, [v, k, this]);
    }
  }
  entries() {
    this.#list;
    return paramsIterator(this, 'entries');
  }
  keys() {
    this.#list;
    return paramsIterator(this, 'keys');
  }
  values() {
    this.#list;
    return paramsIterator(this, 'values');
  }
  toString() {
    return this.#list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&');
  }
}
const resetParams = URLSearchParams._reset;
delete URLSearchParams._reset;
const paramsList = URLSearchParams._listOf; // for the iterators, which read the list at every step
delete URLSearchParams._listOf;
const paramsIterator = pairIterator('URLSearchParams Iterator', paramsList);
defineProperty(URLSearchParams.prototype, Symbol.iterator, { __proto__: null, value: URLSearchParams.prototype.entries, writable: true, enumerable: false, configurable: true });
asWebIDLInterface(URLSearchParams, 'URLSearchParams');

defineGlobal('URLSearchParams', URLSearchParams);
