// TextEncoder / TextDecoder (UTF-8 only), atob / btoa, DOMException, and the byte helpers
// the other runtime parts use.

const DOMEXCEPTION_CODES = create(null);
[
  ['IndexSizeError', 1], ['HierarchyRequestError', 3], ['WrongDocumentError', 4], ['InvalidCharacterError', 5],
  ['NoModificationAllowedError', 7], ['NotFoundError', 8], ['NotSupportedError', 9], ['InvalidStateError', 11],
  ['SyntaxError', 12], ['InvalidModificationError', 13], ['NamespaceError', 14], ['InvalidAccessError', 15],
  ['TypeMismatchError', 17], ['SecurityError', 18], ['NetworkError', 19], ['AbortError', 20],
  ['URLMismatchError', 21], ['QuotaExceededError', 22], ['TimeoutError', 23], ['InvalidNodeTypeError', 24],
  ['DataCloneError', 25],
].forEach(([name, code]) => { DOMEXCEPTION_CODES[name] = code; });

const domExceptions = privateMap();

class DOMException extends $Error {
  constructor(message = '', name = 'Error') {
    super($String(message));
    domExceptions.set(this, true);
    defineProperty(this, 'name', { __proto__: null, value: $String(name), writable: true, configurable: true });
    defineProperty(this, 'code', { __proto__: null, value: DOMEXCEPTION_CODES[this.name] || 0, configurable: true });
  }
}

/** A DOMException made by the constructor (structuredClone copies those as DOMExceptions). */
function isDOMException(value) {
  return domExceptions.has(value);
}

/** WebIDL's DOMString conversion: String(), except that a Symbol is a TypeError. */
function toDOMString(v) {
  if (typeof v === 'symbol') throw new $TypeError('A Symbol cannot be converted to a string.');
  return $String(v);
}

const $toWellFormed = String.prototype.toWellFormed;

/** WebIDL's USVString conversion: a DOMString whose lone surrogates become U+FFFD. */
function toUSVString(v) {
  return apply($toWellFormed, toDOMString(v), []);
}

/** Any BufferSource as a Uint8Array view (no copy). */
function toBytes(source, what) {
  if (source instanceof $ArrayBuffer) return new $Uint8Array(source);
  if (isView(source)) return new $Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  throw new $TypeError(`${what} must be an ArrayBuffer, a TypedArray or a DataView.`);
}

function utf8Encode(input) {
  const str = toDOMString(input);
  const n = str.length;
  const out = new $Uint8Array(n * 3);
  let j = 0;
  for (let i = 0; i < n; i++) {
    let c = str.charCodeAt(i);
    if (c < 0x80) {
      out[j++] = c;
    } else if (c < 0x800) {
      out[j++] = 0xc0 | (c >> 6);
      out[j++] = 0x80 | (c & 63);
    } else {
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        const d = str.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          i++;
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          out[j++] = 0xf0 | (cp >> 18);
          out[j++] = 0x80 | ((cp >> 12) & 63);
          out[j++] = 0x80 | ((cp >> 6) & 63);
          out[j++] = 0x80 | (cp & 63);
          continue;
        }
      }
      if (c >= 0xd800 && c <= 0xdfff) c = 0xfffd; // a lone surrogate
      out[j++] = 0xe0 | (c >> 12);
      out[j++] = 0x80 | ((c >> 6) & 63);
      out[j++] = 0x80 | (c & 63);
    }
  }
  return out.slice(0, j);
}

/** Code units → string, in chunks (String.fromCharCode has an argument limit). */
class StringBuilder {
  constructor() {
    this.parts = [];
    this.units = [];
  }
  push(unit) {
    this.units.push(unit);
    if (this.units.length === 8192) this.flush();
  }
  pushCodePoint(cp) {
    if (cp > 0xffff) {
      cp -= 0x10000;
      this.push(0xd800 + (cp >> 10));
      this.push(0xdc00 + (cp & 0x3ff));
    } else {
      this.push(cp);
    }
  }
  flush() {
    if (this.units.length) this.parts.push(apply($String.fromCharCode, null, this.units));
    this.units = [];
  }
  toString() {
    this.flush();
    return this.parts.join('');
  }
}

/** WHATWG UTF-8 decode: each maximal invalid subpart becomes one U+FFFD (or throws when fatal). */
function utf8Decode(bytes, fatal) {
  const sb = new StringBuilder();
  const n = bytes.length;
  let i = 0;
  const bad = () => {
    if (fatal) throw new $TypeError('The encoded data was not valid UTF-8.');
    sb.push(0xfffd);
  };
  while (i < n) {
    const b = bytes[i];
    if (b < 0x80) {
      sb.push(b);
      i++;
      continue;
    }
    let need;
    let cp;
    let lower = 0x80;
    let upper = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      cp = b & 0xf;
      if (b === 0xe0) lower = 0xa0;
      if (b === 0xed) upper = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      cp = b & 7;
      if (b === 0xf0) lower = 0x90;
      if (b === 0xf4) upper = 0x8f;
    } else {
      bad();
      i++;
      continue;
    }
    let k = 1;
    for (; k <= need; k++) {
      if (i + k >= n) break;
      const c = bytes[i + k];
      if (c < lower || c > upper) break;
      lower = 0x80;
      upper = 0xbf;
      cp = (cp << 6) | (c & 0x3f);
    }
    if (k <= need) {
      bad();
      i += k;
      continue;
    }
    sb.pushCodePoint(cp);
    i += need + 1;
  }
  return sb.toString();
}

/** How many bytes at the end of `bytes` start a sequence that is still incomplete. */
function incompleteTail(bytes) {
  const n = bytes.length;
  for (let back = 1; back <= 3 && back <= n; back++) {
    const b = bytes[n - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: keep looking for the lead
    const need = b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : 0;
    return need >= back ? back : 0;
  }
  return 0;
}

const UTF8_LABELS = ['utf-8', 'utf8', 'unicode-1-1-utf-8', 'unicode11utf8', 'unicode20utf8', 'x-unicode20utf8'];

class TextEncoder {
  constructor() {
    markPlatformObject(this);
  }
  get encoding() {
    return 'utf-8';
  }
  encode(input = '') {
    return utf8Encode(input);
  }
  encodeInto(source, destination) {
    if (!(destination instanceof $Uint8Array)) throw new $TypeError('The destination must be a Uint8Array.');
    const str = toDOMString(source);
    let read = 0;
    let written = 0;
    for (let i = 0; i < str.length; ) {
      const c = str.codePointAt(i);
      const units = c > 0xffff ? 2 : 1;
      const bytes = utf8Encode(str.slice(i, i + units));
      if (written + bytes.length > destination.length) break;
      destination.set(bytes, written);
      written += bytes.length;
      read += units;
      i += units;
    }
    return { read, written };
  }
  get [Symbol.toStringTag]() {
    return 'TextEncoder';
  }
}

class TextDecoder {
  #fatal;
  #ignoreBOM;
  #pending = new $Uint8Array(0);
  #started = false;
  constructor(label = 'utf-8', options = {}) {
    markPlatformObject(this);
    if (!UTF8_LABELS.includes($String(label).trim().toLowerCase())) {
      throw new $RangeError(`The "${label}" encoding is not supported: only UTF-8 is available.`);
    }
    this.#fatal = Boolean(options && options.fatal);
    this.#ignoreBOM = Boolean(options && options.ignoreBOM);
  }
  get encoding() {
    return 'utf-8';
  }
  get fatal() {
    return this.#fatal;
  }
  get ignoreBOM() {
    return this.#ignoreBOM;
  }
  get [Symbol.toStringTag]() {
    return 'TextDecoder';
  }
  decode(input, options = {}) {
    let bytes = input === undefined ? new $Uint8Array(0) : toBytes(input, 'The input');
    if (this.#pending.length) {
      const joined = new $Uint8Array(this.#pending.length + bytes.length);
      joined.set(this.#pending);
      joined.set(bytes, this.#pending.length);
      bytes = joined;
    }
    const stream = Boolean(options && options.stream);
    const hold = stream ? incompleteTail(bytes) : 0;
    this.#pending = hold ? bytes.slice(bytes.length - hold) : new $Uint8Array(0);
    if (hold) bytes = bytes.subarray(0, bytes.length - hold);
    const sawBytes = bytes.length > 0;
    if (!this.#started && !this.#ignoreBOM && bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      bytes = bytes.subarray(3);
    }
    // The BOM is only looked for at the start of a stream; a non-streaming call ends the stream.
    this.#started = stream && (this.#started || sawBytes);
    return utf8Decode(bytes, this.#fatal);
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new $Uint8Array(128).fill(255);
for (let i = 0; i < 64; i++) B64_INDEX[B64.charCodeAt(i)] = i;

function bytesToBase64(bytes) {
  const sb = new StringBuilder();
  const n = bytes.length;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    sb.push(B64.charCodeAt(v >> 18));
    sb.push(B64.charCodeAt((v >> 12) & 63));
    sb.push(B64.charCodeAt((v >> 6) & 63));
    sb.push(B64.charCodeAt(v & 63));
  }
  if (i < n) {
    const v = (bytes[i] << 16) | (i + 1 < n ? bytes[i + 1] << 8 : 0);
    sb.push(B64.charCodeAt(v >> 18));
    sb.push(B64.charCodeAt((v >> 12) & 63));
    sb.push(i + 1 < n ? B64.charCodeAt((v >> 6) & 63) : 61);
    sb.push(61);
  }
  return sb.toString();
}

/** Forgiving base64 decode (the atob rules); undefined when the input is not base64. */
function base64ToBytes(input) {
  let s = $String(input).replace(/[\t\n\f\r ]/g, '');
  if (s.length % 4 === 0) s = s.replace(/==?$/, '');
  if (s.length % 4 === 1 || /[^A-Za-z0-9+/]/.test(s)) return undefined;
  const out = new $Uint8Array((s.length * 3) >> 2);
  let bits = 0;
  let acc = 0;
  let j = 0;
  for (let i = 0; i < s.length; i++) {
    acc = (acc << 6) | B64_INDEX[s.charCodeAt(i)];
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[j++] = (acc >> bits) & 0xff;
    }
  }
  return out;
}

function btoa(data) {
  if (arguments.length === 0) throw new $TypeError('btoa requires 1 argument.');
  const s = toDOMString(data);
  const bytes = new $Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c > 0xff) throw new DOMException('The string to be encoded contains characters outside of the Latin1 range.', 'InvalidCharacterError');
    bytes[i] = c;
  }
  return bytesToBase64(bytes);
}

function atob(data) {
  if (arguments.length === 0) throw new $TypeError('atob requires 1 argument.');
  const bytes = base64ToBytes(toDOMString(data));
  if (bytes === undefined) throw new DOMException('The string to be decoded is not correctly encoded.', 'InvalidCharacterError');
  const sb = new StringBuilder();
  for (let i = 0; i < bytes.length; i++) sb.push(bytes[i]);
  return sb.toString();
}

defineGlobal('DOMException', DOMException);
defineGlobal('TextEncoder', TextEncoder);
defineGlobal('TextDecoder', TextDecoder);
defineGlobal('atob', atob);
defineGlobal('btoa', btoa);
