// URL: the WHATWG URL parser for what user code meets in practice — special and non-special
// schemes, relative resolution, IPv4/IPv6/IDN hosts (./url-host.js), percent-encoding sets,
// dot segments, setters with the parser's state overrides. Left out, as meaningless inside
// the sandbox: Windows drive letters in file URLs (a blob: URL's origin is that of the URL in
// its path, as the standard asks when there is no blob store).
// URLSearchParams is in ./search-params.js.

const SPECIAL_PORTS = create(null);
SPECIAL_PORTS['ftp:'] = '21';
SPECIAL_PORTS['file:'] = '';
SPECIAL_PORTS['http:'] = '80';
SPECIAL_PORTS['https:'] = '443';
SPECIAL_PORTS['ws:'] = '80';
SPECIAL_PORTS['wss:'] = '443';
const isSpecial = (scheme) => SPECIAL_PORTS[scheme] !== undefined;

// Percent-encode sets as "also encode these", on top of C0 controls, DEL and non-ASCII
// (C0_SET alone, where a space stays a space).
const C0_SET = null;
const FRAGMENT_SET = ' "<>`';
const QUERY_SET = ' "#<>';
const SPECIAL_QUERY_SET = QUERY_SET + "'";
const PATH_SET = QUERY_SET + '?^`{}';
const USERINFO_SET = PATH_SET + '/:;=@[\\]|';
const HEX = '0123456789ABCDEF';

function percentEncode(str, set) {
  let out = '';
  for (const ch of str) {
    const c = ch.codePointAt(0);
    if (set === C0_SET ? c >= 0x20 && c < 0x7f : c > 0x20 && c < 0x7f && !set.includes(ch)) {
      out += ch;
    } else {
      for (const b of utf8Encode(ch)) out += '%' + HEX[b >> 4] + HEX[b & 15];
    }
  }
  return out;
}

function percentDecodeBytes(str) {
  const bytes = utf8Encode(str);
  const out = new $Uint8Array(bytes.length);
  let j = 0;
  const hex = (b) => (b >= 48 && b <= 57 ? b - 48 : b >= 65 && b <= 70 ? b - 55 : b >= 97 && b <= 102 ? b - 87 : -1);
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === 37 && i + 2 < bytes.length && hex(bytes[i + 1]) >= 0 && hex(bytes[i + 2]) >= 0) {
      out[j++] = hex(bytes[i + 1]) * 16 + hex(bytes[i + 2]);
      i += 2;
    } else {
      out[j++] = bytes[i];
    }
  }
  return out.subarray(0, j);
}

function invalidURL(input) {
  return new $TypeError(`Invalid URL: ${$String(input).slice(0, 200)}`);
}

// ---- the parser -----------------------------------------------------------------------

const isSingleDot = (s) => s === '.' || s.toLowerCase() === '%2e';
const isDoubleDot = (s) => /^(\.|%2e)(\.|%2e)$/i.test(s);

/** Appends the segments of `path` (no leading slash) to `segments`, resolving dot segments. */
function pushSegments(segments, path, special) {
  const parts = path.split(special ? /[/\\]/ : '/');
  for (let i = 0; i < parts.length; i++) {
    const last = i === parts.length - 1;
    const seg = parts[i];
    if (isDoubleDot(seg)) {
      if (segments.length) segments.pop();
      if (last) segments.push('');
    } else if (isSingleDot(seg)) {
      if (last) segments.push('');
    } else {
      segments.push(percentEncode(seg, PATH_SET));
    }
  }
  return segments;
}

/** Splits off "?query" and "#fragment"; encodes both. */
function splitTail(rest, special) {
  let fragment = null;
  let query = null;
  const h = rest.indexOf('#');
  if (h >= 0) {
    fragment = percentEncode(rest.slice(h + 1), FRAGMENT_SET);
    rest = rest.slice(0, h);
  }
  const q = rest.indexOf('?');
  if (q >= 0) {
    query = percentEncode(rest.slice(q + 1), special ? SPECIAL_QUERY_SET : QUERY_SET);
    rest = rest.slice(0, q);
  }
  return { rest, query, fragment };
}

function parseAuthority(rec, rest, input) {
  const special = isSpecial(rec.scheme);
  const end = rest.search(special ? /[/\\?#]/ : /[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  let hostPort = authority;
  const at = authority.lastIndexOf('@');
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    hostPort = authority.slice(at + 1);
    const colon = userinfo.indexOf(':');
    rec.username = percentEncode(colon < 0 ? userinfo : userinfo.slice(0, colon), USERINFO_SET);
    rec.password = colon < 0 ? '' : percentEncode(userinfo.slice(colon + 1), USERINFO_SET);
  }
  let host = hostPort;
  let port = '';
  const m = /^(\[[^\]]*\]|[^:]*)(?::(.*))?$/.exec(hostPort);
  if (!m) throw invalidURL(input);
  host = m[1];
  if (m[2] !== undefined) {
    if (!/^[0-9]*$/.test(m[2])) throw invalidURL(input);
    if (m[2] !== '') {
      const n = parseInt(m[2], 10);
      if (n > 65535) throw invalidURL(input);
      port = $String(n);
    }
  }
  if (rec.scheme === 'file:') {
    if (at >= 0 || m[2] !== undefined) throw invalidURL(input);
    rec.host = host === '' ? '' : parseHost(host, true, input);
    if (rec.host === 'localhost') rec.host = '';
  } else {
    if (special && host === '') throw invalidURL(input);
    rec.host = host === '' ? '' : parseHost(host, special, input);
    if (host === '' && (at >= 0 || m[2] !== undefined)) throw invalidURL(input);
  }
  rec.port = port === SPECIAL_PORTS[rec.scheme] ? '' : port;
  return end < 0 ? '' : rest.slice(end);
}

function newRecord(scheme) {
  return { scheme, username: '', password: '', host: null, port: '', path: [], opaque: null, query: null, fragment: null };
}

function parseURL(input, base) {
  let s = $String(input).replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '').replace(/[\t\n\r]/g, '');
  const m = /^([A-Za-z][A-Za-z0-9+\-.]*):/.exec(s);
  let rec;
  if (m) {
    const scheme = m[1].toLowerCase() + ':';
    s = s.slice(m[0].length);
    const special = isSpecial(scheme);
    if (special && base && base.scheme === scheme && !/^[/\\]{2}/.test(s)) {
      return parseRelative(s, base, input);
    }
    rec = newRecord(scheme);
    const { rest, query, fragment } = splitTail(s, special);
    rec.query = query;
    rec.fragment = fragment;
    if (scheme === 'file:') {
      let path = rest;
      if (/^[/\\]{2}/.test(rest)) path = parseAuthority(rec, rest.slice(2), input);
      else rec.host = '';
      pushSegments(rec.path, path.replace(/^[/\\]/, ''), true);
    } else if (special) {
      const path = parseAuthority(rec, rest.replace(/^[/\\]*/, ''), input);
      pushSegments(rec.path, path.replace(/^[/\\]/, ''), true);
    } else if (rest.startsWith('//')) {
      const path = parseAuthority(rec, rest.slice(2), input);
      if (path !== '') pushSegments(rec.path, path.slice(1), false);
    } else if (rest.startsWith('/')) {
      pushSegments(rec.path, rest.slice(1), false);
    } else {
      rec.opaque = opaquePath(rest, query !== null || fragment !== null);
    }
    return rec;
  }
  if (!base) throw invalidURL(input);
  return parseRelative(s, base, input);
}

/**
 * An opaque path (mailto:…, data:…) keeps its spaces, except that one right before the query or
 * fragment becomes %20: removing the query or fragment later can then never leave the path
 * ending in a space (the URL standard's rule since 2024).
 */
function opaquePath(rest, followed) {
  const path = percentEncode(rest, C0_SET);
  return followed && path.endsWith(' ') ? path.slice(0, -1) + '%20' : path;
}

function parseRelative(s, base, input) {
  const special = isSpecial(base.scheme);
  if (base.opaque !== null) {
    if (!s.startsWith('#')) throw invalidURL(input);
    const rec = { ...base, path: [] };
    rec.fragment = percentEncode(s.slice(1), FRAGMENT_SET);
    return rec;
  }
  const rec = newRecord(base.scheme);
  const { rest, query, fragment } = splitTail(s, special);
  rec.fragment = fragment;
  const slash = special ? /^[/\\]/ : /^\//;
  const twoSlashes = special ? /^[/\\]{2}/ : /^\/\//;
  if (twoSlashes.test(rest)) {
    rec.query = query;
    const path = parseAuthority(rec, rest.slice(2), input);
    if (path !== '' || special) pushSegments(rec.path, path.replace(slash, ''), special);
    return rec;
  }
  rec.username = base.username;
  rec.password = base.password;
  rec.host = base.host;
  rec.port = base.port;
  if (slash.test(rest)) {
    rec.query = query;
    pushSegments(rec.path, rest.slice(1), special);
  } else if (rest === '') {
    rec.path = base.path.slice();
    rec.query = query === null ? base.query : query;
  } else {
    rec.query = query;
    rec.path = base.path.slice(0, -1);
    pushSegments(rec.path, rest, special);
  }
  return rec;
}

function serializeHost(rec) {
  return rec.host + (rec.port !== '' ? ':' + rec.port : '');
}

function serializePath(rec) {
  if (rec.opaque !== null) return rec.opaque;
  return rec.path.length || isSpecial(rec.scheme) ? '/' + rec.path.join('/') : '';
}

function serializeURL(rec, excludeFragment) {
  let out = rec.scheme;
  if (rec.host !== null) {
    out += '//';
    if (rec.username !== '' || rec.password !== '') {
      out += rec.username + (rec.password !== '' ? ':' + rec.password : '') + '@';
    }
    out += serializeHost(rec);
  } else if (rec.opaque === null && rec.path.length > 1 && rec.path[0] === '') {
    out += '/.';
  }
  out += serializePath(rec);
  if (rec.query !== null) out += '?' + rec.query;
  if (!excludeFragment && rec.fragment !== null) out += '#' + rec.fragment;
  return out;
}

// ---- URL ------------------------------------------------------------------------------------

const urlRecords = privateMap(); // URL → its record
const urlParams = privateMap(); // URL → its URLSearchParams

/** What a setter parses: the value as a USVString, without tabs and newlines (the parser skips them). */
function setterInput(v) {
  return toUSVString(v).replace(/[\t\n\r]/g, '');
}

/**
 * The serialized origin: a special scheme's own (but file:'s, which is opaque), and for blob:
 * that of the http(s) URL in its path. Every other origin is opaque, "null".
 */
function originOf(rec) {
  if (rec.scheme === 'blob:') {
    const inner = parseOrUndefined(serializePath(rec), undefined);
    return inner !== undefined && (inner.scheme === 'http:' || inner.scheme === 'https:') ? originOf(inner) : 'null';
  }
  if (!isSpecial(rec.scheme) || rec.scheme === 'file:') return 'null';
  return rec.scheme + '//' + serializeHost(rec);
}

function recordOf(url) {
  const rec = urlRecords.get(url);
  if (!rec) throw new $TypeError('Illegal invocation: not a URL.');
  return rec;
}

/** The record of `url` resolved against `base` (both converted as WebIDL's USVStrings), or undefined when either is no URL. */
function parseOrUndefined(url, base) {
  const input = toUSVString(url);
  const baseInput = base === undefined ? undefined : toUSVString(base);
  try {
    return parseURL(input, baseInput === undefined ? undefined : parseURL(baseInput, undefined));
  } catch {
    return undefined;
  }
}

// `base` is read from `arguments`, so that each function's length is 1, as WebIDL gives it.
class URL {
  constructor(url) {
    requireArguments(arguments.length, 1, 'URL');
    const rec = parseOrUndefined(url, arguments[1]);
    if (rec === undefined) throw invalidURL(url);
    markPlatformObject(this);
    urlRecords.set(this, rec);
    const params = new URLSearchParams(rec.query || '');
    paramsOwner.set(params, this);
    urlParams.set(this, params);
  }
  static canParse(url) {
    requireArguments(arguments.length, 1, 'URL.canParse');
    return parseOrUndefined(url, arguments[1]) !== undefined;
  }
  static parse(url) {
    requireArguments(arguments.length, 1, 'URL.parse');
    const base = arguments[1];
    return parseOrUndefined(url, base) === undefined ? null : new URL(url, base);
  }
  #replace(rec) {
    urlRecords.set(this, rec);
    resetParams(urlParams.get(this), rec.query);
  }
  get href() {
    return serializeURL(recordOf(this), false);
  }
  set href(v) {
    recordOf(this);
    const rec = parseOrUndefined(v, undefined);
    if (rec === undefined) throw invalidURL(v);
    this.#replace(rec);
  }
  get origin() {
    return originOf(recordOf(this));
  }
  get protocol() {
    return recordOf(this).scheme;
  }
  set protocol(v) {
    const rec = recordOf(this);
    const m = /^([A-Za-z][A-Za-z0-9+\-.]*)(:|$)/.exec(setterInput(v));
    if (!m) return;
    const scheme = m[1].toLowerCase() + ':';
    if (isSpecial(scheme) !== isSpecial(rec.scheme)) return;
    if (scheme === 'file:' && (rec.username || rec.password || rec.port)) return;
    if (rec.scheme === 'file:' && rec.host === '') return;
    rec.scheme = scheme;
    if (rec.port === SPECIAL_PORTS[scheme]) rec.port = '';
  }
  get username() {
    return recordOf(this).username;
  }
  set username(v) {
    const rec = recordOf(this);
    if (rec.host === null || rec.host === '' || rec.scheme === 'file:') return;
    rec.username = percentEncode(toUSVString(v), USERINFO_SET); // set as given: not parsed, so a tab is encoded
  }
  get password() {
    return recordOf(this).password;
  }
  set password(v) {
    const rec = recordOf(this);
    if (rec.host === null || rec.host === '' || rec.scheme === 'file:') return;
    rec.password = percentEncode(toUSVString(v), USERINFO_SET); // set as given: not parsed, so a tab is encoded
  }
  get host() {
    const rec = recordOf(this);
    return rec.host === null ? '' : serializeHost(rec);
  }
  set host(v) {
    this.#setHost(setterInput(v), true);
  }
  get hostname() {
    return recordOf(this).host || '';
  }
  set hostname(v) {
    this.#setHost(setterInput(v), false);
  }
  /** The host (and hostname) state of the URL parser, with its state override. */
  #setHost(v, withPort) {
    const rec = recordOf(this);
    if (rec.opaque !== null) return;
    const special = isSpecial(rec.scheme);
    const end = v.search(special ? /[/\\?#]/ : /[/?#]/);
    if (end >= 0) v = v.slice(0, end);
    if (rec.scheme === 'file:') {
      // The file host state: everything up to the path is the host (a colon too, which no host may hold).
      try {
        const host = v === '' ? '' : parseHost(v, true, v);
        rec.host = host === 'localhost' ? '' : host;
      } catch {
        // not a host: the URL is left as it was
      }
      return;
    }
    const m = /^(\[[^\]]*\]|[^:]*)(:?)([0-9]*)/.exec(v);
    // A colon after nothing is no host; the hostname setter stops at any colon.
    if (m[2] === ':' && (m[1] === '' || !withPort)) return;
    if (m[1] === '' && (special || rec.username !== '' || rec.password !== '' || rec.port !== '')) return;
    try {
      rec.host = parseHost(m[1], special, v);
    } catch {
      return;
    }
    if (m[3] !== '') this.port = m[3];
  }
  get port() {
    return recordOf(this).port;
  }
  set port(v) {
    const rec = recordOf(this);
    if (rec.host === null || rec.host === '' || rec.scheme === 'file:') return;
    const s = setterInput(v);
    if (s === '') {
      rec.port = '';
      return;
    }
    const m = /^[0-9]+/.exec(s);
    if (!m || parseInt(m[0], 10) > 65535) return;
    const port = $String(parseInt(m[0], 10));
    rec.port = port === SPECIAL_PORTS[rec.scheme] ? '' : port;
  }
  get pathname() {
    return serializePath(recordOf(this));
  }
  set pathname(v) {
    const rec = recordOf(this);
    if (rec.opaque !== null) return;
    const special = isSpecial(rec.scheme);
    const s = setterInput(v).replace(/[?#]/g, (c) => (c === '?' ? '%3F' : '%23'));
    rec.path = [];
    if (s === '' && !special) {
      // The path start state: a URL without a host keeps one empty segment ("foo:" + "/").
      if (rec.host === null) rec.path.push('');
      return;
    }
    pushSegments(rec.path, s.replace(special ? /^[/\\]/ : /^\//, ''), special);
  }
  get search() {
    const q = recordOf(this).query;
    return q ? '?' + q : '';
  }
  /** Only the empty string removes the query: "?" leaves an empty one (href ends in "?"). */
  set search(v) {
    const rec = recordOf(this);
    const given = toUSVString(v);
    rec.query = given === '' ? null : percentEncode(setterInput(given.replace(/^\?/, '')), isSpecial(rec.scheme) ? SPECIAL_QUERY_SET : QUERY_SET);
    resetParams(urlParams.get(this), rec.query);
  }
  get searchParams() {
    recordOf(this);
    return urlParams.get(this);
  }
  get hash() {
    const f = recordOf(this).fragment;
    return f ? '#' + f : '';
  }
  /** Only the empty string removes the fragment: "#" leaves an empty one (href ends in "#"). */
  set hash(v) {
    const rec = recordOf(this);
    const given = toUSVString(v);
    rec.fragment = given === '' ? null : percentEncode(setterInput(given.replace(/^#/, '')), FRAGMENT_SET);
  }
  toString() {
    return serializeURL(recordOf(this), false);
  }
  toJSON() {
    return serializeURL(recordOf(this), false);
  }
}
asWebIDLInterface(URL, 'URL');

defineGlobal('URL', URL);
