// fetch through the host's guarded outbound client, with minimal Headers and Response. Bodies
// cross as strings: a request body may be a string, URLSearchParams or bytes (sent as UTF-8
// text); a response body is text, so arrayBuffer() returns its UTF-8 bytes.

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

// What the Fetch standard refuses in a header value (NUL, CR, LF), and what is not a ByteString.
const BAD_HEADER_VALUE = /[\0\r\n]|[^\0-\u00ff]/;

/**
 * Trimmed as the standard does; a value that cannot be sent is a TypeError here, where the code
 * set it, not a failure of the request later. The message names the header, never the value,
 * which may be a credential or detokenized data.
 */
function normalizeHeaderValue(name, v) {
  const value = $String(v).replace(/^[\t\n\r ]+|[\t\n\r ]+$/g, '');
  if (BAD_HEADER_VALUE.test(value)) {
    throw new $TypeError(`Invalid value for the header ${name}: a line break, a NUL or a character above U+00FF cannot be sent.`);
  }
  return value;
}

class Headers {
  #map = new Map(); // lower-cased name → value
  constructor(init) {
    markPlatformObject(this);
    if (init === undefined || init === null) return;
    if (init instanceof Headers) {
      this.#map = new Map(init.#map); // already checked when they were set
    } else if (typeof init === 'object' && typeof init[Symbol.iterator] === 'function') {
      for (const pair of init) {
        const p = Array.from(pair);
        if (p.length !== 2) throw new $TypeError('Each header must be a [name, value] pair.');
        this.append(p[0], p[1]);
      }
    } else if (typeof init === 'object') {
      for (const k of keys(init)) this.append(k, init[k]);
    } else {
      throw new $TypeError('Headers must be an object, an array of pairs or a Headers.');
    }
  }
  /**
   * A reply's headers as the host sent them: what a destination answered is not refused here
   * (a UTF-8 value, say), only what the code itself sets is checked.
   */
  static _fromHost(obj) {
    const h = new Headers();
    for (const k of keys(obj)) h.#map.set($String(k).toLowerCase(), $String(obj[k]));
    return h;
  }
  #name(name) {
    const n = $String(name);
    if (!HEADER_NAME.test(n)) throw new $TypeError(`Invalid header name: ${n}`);
    return n.toLowerCase();
  }
  append(name, value) {
    const n = this.#name(name);
    const v = normalizeHeaderValue(n, value);
    const old = this.#map.get(n);
    this.#map.set(n, old === undefined ? v : `${old}, ${v}`);
  }
  set(name, value) {
    const n = this.#name(name);
    this.#map.set(n, normalizeHeaderValue(n, value));
  }
  get(name) {
    const v = this.#map.get(this.#name(name));
    return v === undefined ? null : v;
  }
  has(name) {
    return this.#map.has(this.#name(name));
  }
  delete(name) {
    this.#map.delete(this.#name(name));
  }
  forEach(callback, thisArg) {
    for (const [k, v] of this) apply(callback, thisArg, [v, k, this]);
  }
  *entries() {
    const names = Array.from(this.#map.keys()).sort();
    for (const k of names) yield [k, this.#map.get(k)];
  }
  *keys() {
    for (const [k] of this.entries()) yield k;
  }
  *values() {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  get [Symbol.toStringTag]() {
    return 'Headers';
  }
}

const hostHeaders = Headers._fromHost;
delete Headers._fromHost;

function headersToObject(headers) {
  const out = create(null);
  for (const [k, v] of headers) out[k] = v;
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
