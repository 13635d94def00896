// URLSearchParams (application/x-www-form-urlencoded), linked to its URL when it is one's
// searchParams: a change on either side shows on the other.

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

const paramsOwner = privateMap(); // URLSearchParams → the URL it belongs to

class URLSearchParams {
  #list = [];
  constructor(init = '') {
    markPlatformObject(this);
    if (init instanceof URLSearchParams) {
      this.#list = init.#list.map(([k, v]) => [k, v]);
    } else if (init !== null && typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
      for (const pair of init) {
        const p = Array.from(pair);
        if (p.length !== 2) throw new $TypeError('Each query pair must be an iterable [name, value] tuple.');
        this.#list.push([$String(p[0]), $String(p[1])]);
      }
    } else if (init !== null && typeof init === 'object') {
      for (const k of keys(init)) this.#list.push([k, $String(init[k])]);
    } else {
      const s = $String(init);
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
  get size() {
    return this.#list.length;
  }
  append(name, value) {
    this.#list.push([$String(name), $String(value)]);
    this.#update();
  }
  delete(name, value) {
    name = $String(name);
    this.#list = this.#list.filter(([k, v]) => !(k === name && (value === undefined || v === $String(value))));
    this.#update();
  }
  get(name) {
    name = $String(name);
    const e = this.#list.find(([k]) => k === name);
    return e ? e[1] : null;
  }
  getAll(name) {
    name = $String(name);
    return this.#list.filter(([k]) => k === name).map(([, v]) => v);
  }
  has(name, value) {
    name = $String(name);
    return this.#list.some(([k, v]) => k === name && (value === undefined || v === $String(value)));
  }
  set(name, value) {
    name = $String(name);
    value = $String(value);
    const i = this.#list.findIndex(([k]) => k === name);
    if (i < 0) {
      this.#list.push([name, value]);
    } else {
      this.#list[i][1] = value;
      this.#list = this.#list.filter(([k], j) => j <= i || k !== name);
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
  forEach(callback, thisArg) {
    for (const [k, v] of this.#list.slice()) apply(callback, thisArg, [v, k, this]);
  }
  *entries() {
    for (const [k, v] of this.#list.slice()) yield [k, v];
  }
  *keys() {
    for (const [k] of this.#list.slice()) yield k;
  }
  *values() {
    for (const [, v] of this.#list.slice()) yield v;
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  toString() {
    return this.#list.map(([k, v]) => formEncode(k) + '=' + formEncode(v)).join('&');
  }
  get [Symbol.toStringTag]() {
    return 'URLSearchParams';
  }
}
const resetParams = URLSearchParams._reset;
delete URLSearchParams._reset;


defineGlobal('URLSearchParams', URLSearchParams);
