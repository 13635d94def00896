// fetch through the host's guarded outbound client, with minimal Headers and Response. Bodies
// cross as strings: a request body may be a string, URLSearchParams or bytes (sent as UTF-8
// text); a response body is text, so arrayBuffer() returns its UTF-8 bytes.

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// What the Fetch standard refuses in a header value (NUL, CR, LF), and what is not a ByteString.
const BAD_HEADER_VALUE = /[\0\r\n]|[^\0-\u00ff]/;

/** WebIDL's ByteString conversion: a DOMString whose code units all fit in a byte. */
function toByteString(v, what) {
  const s = toDOMString(v);
  if (/[^\0-\u00ff]/.test(s)) throw new $TypeError(`${what} holds a character above U+00FF, which a header cannot carry.`);
  return s;
}

function headerName(name) {
  const n = toByteString(name, 'A header name');
  if (!HEADER_NAME.test(n)) throw new $TypeError(`Invalid header name: ${n}`);
  return n.toLowerCase();
}

/**
 * Trimmed of HTTP whitespace as the standard does; a value that cannot be sent is a TypeError
 * here, where the code set it, not a failure of the request later. The message names the
 * header, never the value, which may be a credential or detokenized data.
 */
function normalizeHeaderValue(name, v) {
  const value = toDOMString(v).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (BAD_HEADER_VALUE.test(value)) {
    throw new $TypeError(`Invalid value for the header ${name}: a line break, a NUL or a character above U+00FF cannot be sent.`);
  }
  return value;
}

/** The Fetch standard's header list as Headers shows it: names sorted, values of one name combined, set-cookie kept apart. */
function sortAndCombine(list) {
  const names = [];
  for (const [name] of list) if (!names.includes(name)) names.push(name);
  names.sort();
  const out = [];
  for (const name of names) {
    const values = list.filter(([n]) => n === name).map(([, v]) => v);
    if (name === 'set-cookie') for (const v of values) out.push([name, v]);
    else out.push([name, values.join(', ')]);
  }
  return out;
}

// Methods read `this.#list` before anything else: another object as `this` is a TypeError first.
class Headers {
  #list = []; // the header list: [lower-cased name, value] in the order they were added
  #sorted = null; // sortAndCombine(#list), until the list changes
  constructor(init = undefined) {
    markPlatformObject(this);
    if (init === undefined) return;
    if (!isObjectLike(init)) throw new $TypeError('Headers must be made from an object, a sequence of [name, value] pairs or a Headers.');
    if (#list in init) {
      this.#list = init.#list.map(([k, v]) => [k, v]); // already checked when they were set
      return;
    }
    const iterate = init[Symbol.iterator];
    if (iterate === undefined || iterate === null) {
      // A record: own enumerable keys, Symbols included (a TypeError, as WebIDL converts them).
      for (const key of Reflect.ownKeys(init)) {
        const desc = getOwnPropertyDescriptor(init, key);
        if (desc !== undefined && desc.enumerable) this.append(toByteString(key, 'A header name'), init[key]);
      }
      return;
    }
    if (typeof iterate !== 'function') throw new $TypeError('Headers: the init’s Symbol.iterator is not a function.');
    for (const pair of init) {
      if (!isObjectLike(pair) || typeof pair[Symbol.iterator] !== 'function') throw new $TypeError('Each header must be a [name, value] pair.');
      const p = Array.from(pair);
      if (p.length !== 2) throw new $TypeError('Each header must be a [name, value] pair.');
      this.append(p[0], p[1]);
    }
  }
  /**
   * A reply's headers as the host sent them: what a destination answered is not refused here
   * (a UTF-8 value, say), only what the code itself sets is checked.
   */
  static _fromHost(obj) {
    const h = new Headers();
    for (const k of keys(obj)) h.#list.push([$String(k).toLowerCase(), $String(obj[k])]);
    return h;
  }
  static _sortedOf(headers) {
    if (headers.#sorted === null) headers.#sorted = sortAndCombine(headers.#list);
    return headers.#sorted;
  }
  #changed(list) {
    this.#list = list;
    this.#sorted = null;
  }
  append(name, value) {
    const list = this.#list;
    requireArguments(arguments.length, 2, 'Headers.append');
    const n = headerName(name);
    list.push([n, normalizeHeaderValue(n, value)]);
    this.#changed(list);
  }
  set(name, value) {
    const list = this.#list;
    requireArguments(arguments.length, 2, 'Headers.set');
    const n = headerName(name);
    const v = normalizeHeaderValue(n, value);
    const i = list.findIndex(([k]) => k === n);
    if (i < 0) list.push([n, v]);
    else list[i] = [n, v];
    this.#changed(list.filter(([k], j) => k !== n || j === i || i < 0));
  }
  get(name) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'Headers.get');
    const n = headerName(name);
    const values = list.filter(([k]) => k === n).map(([, v]) => v);
    return values.length ? values.join(', ') : null;
  }
  getSetCookie() {
    return this.#list.filter(([k]) => k === 'set-cookie').map(([, v]) => v);
  }
  has(name) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'Headers.has');
    const n = headerName(name);
    return list.some(([k]) => k === n);
  }
  delete(name) {
    const list = this.#list;
    requireArguments(arguments.length, 1, 'Headers.delete');
    const n = headerName(name);
    this.#changed(list.filter(([k]) => k !== n));
  }
  /** As WebIDL iterates: by position in the sorted list as it is at each step, so changes made by the callback show. */
  forEach(callback, thisArg = undefined) {
    this.#list;
    requireArguments(arguments.length, 1, 'Headers.forEach');
    if (typeof callback !== 'function') throw new $TypeError('Headers.forEach: the callback must be a function.');
    for (let i = 0; i < sortedHeaders(this).length; i++) {
      const [k, v] = sortedHeaders(this)[i];
      apply(callback, thisArg, [v, k, this]);
    }
  }
  entries() {
    this.#list;
    return headersIterator(this, 'entries');
  }
  keys() {
    this.#list;
    return headersIterator(this, 'keys');
  }
  values() {
    this.#list;
    return headersIterator(this, 'values');
  }
}

const hostHeaders = Headers._fromHost;
delete Headers._fromHost;
const sortedHeaders = Headers._sortedOf;
delete Headers._sortedOf;
const headersIterator = pairIterator('Headers Iterator', sortedHeaders);
defineProperty(Headers.prototype, Symbol.iterator, { __proto__: null, value: Headers.prototype.entries, writable: true, enumerable: false, configurable: true });
asWebIDLInterface(Headers, 'Headers');

/** The headers as the host takes them, one value per name (set-cookie values joined as get() joins them). */
function headersToObject(headers) {
  const out = create(null);
  for (const [k, v] of sortedHeaders(headers)) out[k] = out[k] === undefined ? v : `${out[k]}, ${v}`;
  return out;
}

/** Set while a fetch reply or a clone is made: its headers are the reply's, with no content type added. */
let headersAsGiven = false;

function responseAsGiven(body, init) {
  headersAsGiven = true;
  try {
    return new Response(body, init);
  } finally {
    headersAsGiven = false;
  }
}

class Response {
  #body;
  #used = false;
  constructor(body = null, init = {}) {
    markPlatformObject(this);
    const status = init.status === undefined ? 200 : Number(init.status);
    if (!Number.isInteger(status) || status < 200 || status > 599) throw new $RangeError(`Invalid response status: ${init.status}`);
    const headers = new Headers(init.headers);
    // As the Fetch standard extracts a body: a string is text/plain, URLSearchParams a form, bytes get no type.
    if (typeof body === 'string' && !headersAsGiven && !headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
    this.#body = body === null || body === undefined ? '' : typeof body === 'string' ? body : bodyToString(body, headers);
    defineProperty(this, 'status', { __proto__: null, value: status, enumerable: true });
    defineProperty(this, 'statusText', { __proto__: null, value: init.statusText === undefined ? '' : $String(init.statusText), enumerable: true });
    defineProperty(this, 'headers', { __proto__: null, value: headers, enumerable: true });
    defineProperty(this, 'url', { __proto__: null, value: typeof init.url === 'string' ? init.url : '', enumerable: true });
  }
  get ok() {
    return this.status >= 200 && this.status <= 299;
  }
  get redirected() {
    return false;
  }
  /** 'basic' for what fetch returned, 'default' for a Response the code made, as the standard has it. */
  get type() {
    return this.url === '' ? 'default' : 'basic';
  }
  get bodyUsed() {
    return this.#used;
  }
  #consume() {
    if (this.#used) throw new $TypeError('The body has already been read.');
    this.#used = true;
    return this.#body;
  }
  async text() {
    return this.#consume();
  }
  async json() {
    return JSON.parse(this.#consume());
  }
  async arrayBuffer() {
    return utf8Encode(this.#consume()).buffer;
  }
  clone() {
    if (this.#used) throw new $TypeError('The body has already been read.');
    return responseAsGiven(this.#body, { status: this.status, statusText: this.statusText, headers: this.headers, url: this.url });
  }
  static json(data, init = {}) {
    const text = jsonStringify(data);
    if (text === undefined) throw new $TypeError('Response.json: the data cannot be serialized as JSON.');
    const headers = new Headers(init.headers);
    if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    return new Response(text, { ...init, headers });
  }
  get [Symbol.toStringTag]() {
    return 'Response';
  }
}

function bodyToString(body, headers) {
  if (typeof body === 'string') return body;
  if (body instanceof URLSearchParams) {
    if (!headers.has('content-type')) headers.set('content-type', 'application/x-www-form-urlencoded;charset=UTF-8');
    return body.toString();
  }
  if (body instanceof $ArrayBuffer || isView(body)) return utf8Decode(toBytes(body, 'The body'), false);
  return $String(body);
}

// As the Fetch standard does (and Coffer's outbound client, which adds PATCH): the common
// methods in any case are upper-cased, others are sent as written, and these are refused.
const NORMALIZED_METHODS = ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT'];
const FORBIDDEN_METHODS = ['CONNECT', 'TRACE', 'TRACK'];

function normalizeMethod(method) {
  if (!HEADER_NAME.test(method)) throw new $TypeError(`Invalid method: ${method}`);
  const upper = method.toUpperCase();
  if (FORBIDDEN_METHODS.includes(upper)) throw new $TypeError(`fetch cannot send a ${upper} request.`);
  return NORMALIZED_METHODS.includes(upper) ? upper : method;
}

const FAILED = 'fetch failed: ';

/** The host's error as fetch's TypeError; a bridge whose message already says "fetch failed: " is not prefixed twice. */
function fetchFailed(e) {
  const message = typeof e.message === 'string' ? e.message : 'the request could not be sent';
  return new $TypeError(apply($slice, message, [0, FAILED.length]) === FAILED ? message : FAILED + message);
}

async function fetch(input, init = {}) {
  const source = input instanceof URL ? input.href : typeof input === 'string' ? input : input && typeof input.url === 'string' ? input.url : $String(input);
  const url = new URL(source);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new $TypeError(`fetch supports http and https URLs only, not ${url.protocol}`);
  init = init === null || init === undefined ? {} : init;
  const method = normalizeMethod($String(init.method === undefined ? (input && typeof input.method === 'string' ? input.method : 'GET') : init.method));
  const headers = new Headers(init.headers === undefined && input && input.headers ? input.headers : init.headers);
  let body;
  if (init.body !== undefined && init.body !== null) {
    if (method === 'GET' || method === 'HEAD') throw new $TypeError(`A ${method} request cannot have a body.`);
    body = bodyToString(init.body, headers);
    if (!headers.has('content-type')) headers.set('content-type', 'text/plain;charset=UTF-8');
  }
  url.hash = '';
  const reply = await hostCall('fetch', jsonStringify({ __proto__: null, url: url.href, method, headers: headersToObject(headers), body }), fetchFailed);
  return responseAsGiven(reply.body, { status: reply.status, headers: hostHeaders(reply.headers), url: url.href });
}

defineGlobal('Headers', Headers);
defineGlobal('Response', Response);
defineGlobal('fetch', fetch);
