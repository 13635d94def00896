import net from 'node:net';
import { type Readable, Transform } from 'node:stream';
import type { ConnectionOptions } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import { createGuardedConnector, type Resolver, systemResolver } from './connect.ts';
import { describeTarget, OutboundError, toOutboundError } from './errors.ts';
import { BODY_HEADERS, CREDENTIAL_HEADERS, prepareHeaders, prepareMethod, responseHeaders, withoutHeaders } from './headers.ts';
import { type Answer, NodeHttpTransport } from './node-http.ts';
import { AddressPolicy, BLOCKED_PORTS, stripBrackets } from './policy.ts';
import { OriginSlots } from './slots.ts';

export { OutboundError } from './errors.ts';
export type { OutboundCode } from './errors.ts';
export type { ResolvedAddress, Resolver } from './connect.ts';

export type OutboundOptions = {
  /** OUTBOUND_ALLOWLIST entries: hostnames, IPs (v4/v6) or CIDRs allowed even if private/loopback. */
  allowlist: string[];
  /** Total deadline per request — connect, redirects, headers and body — default 25 s. */
  timeoutMs?: number;
  /** Largest response body `request` buffers, default 10 MiB. */
  maxResponseBytes?: number;
  /** Redirects followed when a request asks to follow them, default 5. */
  maxRedirects?: number;
  /** Keep-alive pool size per origin, and so requests in flight per origin; default 64. */
  connections?: number;
  /**
   * A tenant's share of an origin's pool: requests one tenant may have in flight to one
   * origin at once; default half of `connections` (32 of 64), at most all of them.
   * See src/outbound/slots.ts.
   */
  tenantConnections?: number;
  /** A single connection attempt gives up after this long, default 10 s (the request deadline still applies). */
  connectTimeoutMs?: number;
  /** Extra trusted CAs for TLS (tests, on-premises destinations); the system store is used without it. */
  ca?: ConnectionOptions['ca'];
  /** The longest an idle pooled connection is kept, whatever the destination's Keep-Alive asks; default 30 s. */
  keepAliveMaxMs?: number;
  /** Replaces the system resolver (tests, custom DNS). Every address it returns is still checked. */
  resolve?: Resolver;
};

export type OutboundRequest = {
  url: string;
  /** Default GET. */
  method?: string;
  headers?: Record<string, string | string[]>;
  body?: string | Uint8Array;
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** Default false (webhooks and proxies report a redirect as it is); reactor fetch follows. */
  followRedirects?: boolean;
  /**
   * The tenant the call is made for: it takes one of that tenant's share of the origin's
   * connections (`tenantConnections`). Calls without one share a share of their own.
   */
  tenantId?: string;
};

export type OutboundResponse = {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer;
  /** The final URL, after redirects. */
  url: string;
};

export type OutboundStream = {
  status: number;
  headers: Record<string, string | string[]>;
  body: Readable;
  /** The final URL, after redirects. */
  url: string;
};

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const DEFAULT_TIMEOUT_MS = 25_000;
const DEFAULT_MAX_RESPONSE_BYTES = 10 * 1024 * 1024;
const DEFAULT_MAX_REDIRECTS = 5;
const DEFAULT_CONNECTIONS = 64;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_KEEP_ALIVE_MAX_MS = 30_000;
/** Validated first-hop URLs remembered; past it the memory starts over (a bound, not an LRU). */
const VALIDATED_URLS_KEPT = 1024;

/**
 * The one HTTP client for every outbound call Coffer makes (reactor fetch, webhook
 * deliveries, proxies). It refuses private, loopback, link-local and reserved
 * destinations — checked on the resolved address of every new connection and on every
 * redirect hop — bounds every call by a total deadline and a response size, and pools
 * keep-alive connections per origin. See docs/outbound.md.
 */
export class OutboundClient {
  readonly #policy: AddressPolicy;
  readonly #agent: Agent;
  /** For the requests undici cannot send: ones with a Keep-Alive header (see node-http.ts). */
  readonly #node: NodeHttpTransport;
  readonly #timeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #maxRedirects: number;
  /** Who may send now, per origin and tenant; both transports' calls count (see slots.ts). */
  readonly #slots: OriginSlots;
  /** URLs that passed validateUrl, by their text (#validatedFirstHop). */
  readonly #validated = new Map<string, URL>();

  constructor(options: OutboundOptions) {
    this.#policy = new AddressPolicy(options.allowlist ?? []);
    this.#timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
    this.#maxResponseBytes = positive(options.maxResponseBytes, DEFAULT_MAX_RESPONSE_BYTES, 'maxResponseBytes');
    this.#maxRedirects = options.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
    if (!Number.isInteger(this.#maxRedirects) || this.#maxRedirects < 0) throw new TypeError('maxRedirects must be a non-negative integer');
    const connections = positive(options.connections, DEFAULT_CONNECTIONS, 'connections');
    const tenantConnections = positive(options.tenantConnections, Math.max(1, Math.floor(connections / 2)), 'tenantConnections');
    this.#slots = new OriginSlots(connections, tenantConnections);
    // undici honours a destination's "Keep-Alive: timeout=…" up to 10 minutes: destinations
    // chosen by tenants could then pin an idle socket per origin that long, and enough of
    // them would exhaust the process's file descriptors.
    const keepAliveMaxMs = positive(options.keepAliveMaxMs, DEFAULT_KEEP_ALIVE_MAX_MS, 'keepAliveMaxMs');
    const connector = createGuardedConnector({
      policy: this.#policy,
      resolve: options.resolve ?? systemResolver,
      connectTimeoutMs: positive(options.connectTimeoutMs, DEFAULT_CONNECT_TIMEOUT_MS, 'connectTimeoutMs'),
      ca: options.ca,
    });
    this.#agent = new Agent({ connections, keepAliveMaxTimeout: keepAliveMaxMs, connect: connector });
    this.#node = new NodeHttpTransport({ connector, connections, keepAliveMaxMs });
  }

  /**
   * Throws OutboundError('invalid_url') unless an absolute http(s) URL without
   * credentials; 'blocked_address' if the host is a literal IP in a blocked range
   * (hostnames are checked at connect time, on the addresses they resolve to) or the
   * port is one of another protocol's (BLOCKED_PORTS).
   */
  validateUrl(url: string): URL {
    if (typeof url !== 'string') throw new OutboundError('invalid_url', 'the URL must be a string');
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new OutboundError('invalid_url', 'the URL is not an absolute URL');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new OutboundError('invalid_url', `the URL scheme ${parsed.protocol} is not allowed; use http: or https:`);
    }
    if (parsed.username !== '' || parsed.password !== '') {
      throw new OutboundError('invalid_url', 'the URL must not contain credentials; send them in a header');
    }
    // WHATWG parsing already turned "2130706433", "0x7f.1" and "[::ffff:127.0.0.1]" into canonical IPs.
    const host = stripBrackets(parsed.hostname);
    if (host === '') throw new OutboundError('invalid_url', 'the URL has no host');
    if (net.isIP(host) !== 0 && !this.#policy.allowsAddress(host)) {
      throw new OutboundError('blocked_address', `${host} is a private, loopback or reserved address`);
    }
    const port = Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80));
    if (BLOCKED_PORTS.has(port)) {
      throw new OutboundError('blocked_address', `port ${port} belongs to another protocol and is refused for outbound HTTP`, { port });
    }
    return parsed;
  }

  /**
   * validateUrl for the URL a call starts at, remembered by its text: a proxy or a webhook
   * calls the same few URLs over and over, and the answer depends on the text and this
   * client's policy alone. Only what passed is kept (a refusal throws each time), and the URL
   * objects are never changed: a redirect makes new ones (#send).
   */
  #validatedFirstHop(url: string): URL {
    if (typeof url === 'string') {
      const known = this.#validated.get(url);
      if (known !== undefined) return known;
    }
    const parsed = this.validateUrl(url);
    if (this.#validated.size >= VALIDATED_URLS_KEPT) this.#validated.clear();
    this.#validated.set(url, parsed);
    return parsed;
  }

  async request(req: OutboundRequest): Promise<OutboundResponse> {
    return readWhole(await this.#open(req, false, this.#maxResponseBytes));
  }

  /**
   * For proxies: the same checks and deadline, but the body is handed over as a
   * stream instead of being buffered. The deadline keeps running until the body ends
   * (or the caller destroys it); when it passes, the stream errors with 'timeout'.
   * A size limit applies only when `maxResponseBytes` is given on the call. An explicit
   * `connection` header is passed through (see docs/outbound.md).
   */
  async stream(req: OutboundRequest): Promise<OutboundStream> {
    return streamBody(await this.#open(req, true, Infinity));
  }

  /**
   * stream(), except that a body whose declared length is at most `bufferUpTo` bytes is read
   * whole, within the same deadline, and handed over as bytes: no stream in between for a
   * small answer, which a proxy sends back in one write anyway.
   */
  async streamOrBuffer(req: OutboundRequest, bufferUpTo: number): Promise<OutboundStream | OutboundResponse> {
    const opened = await this.#open(req, true, Infinity);
    const length = declaredLength(opened.hop);
    return length < 0 || length > bufferUpTo ? streamBody(opened) : readWhole(opened);
  }

  /**
   * Sends the call and waits for the answer's head, refusing a declared length past the
   * limit (`maxResponseBytes`, else `defaultLimit`); the deadline keeps running for the body.
   */
  async #open(req: OutboundRequest, streaming: boolean, defaultLimit: number): Promise<Opened> {
    const timeoutMs = perCall(req?.timeoutMs, this.#timeoutMs, 'timeoutMs');
    const limit = perCall(req?.maxResponseBytes, defaultLimit, 'maxResponseBytes');
    const deadline = new Deadline(timeoutMs);
    const state: HopState = { url: undefined };
    try {
      const hop = await this.#send(req, deadline, streaming, state);
      if (declaredLength(hop) > limit) throw tooLarge(hop.url, limit, hop.response);
      return { hop, limit, deadline };
    } catch (err) {
      deadline.clear();
      throw toOutboundError(err, state.url, deadline.passed);
    }
  }

  /** Closes pooled connections once in-flight requests finish. */
  async close(): Promise<void> {
    this.#node.close();
    await this.#agent.close();
  }

  async #send(req: OutboundRequest, deadline: Deadline, streaming: boolean, state: HopState): Promise<Hop> {
    if (req === null || typeof req !== 'object') throw new OutboundError('invalid_request', 'the request must be an object');
    let url = this.#validatedFirstHop(req.url);
    state.url = url;
    let method = prepareMethod(req.method);
    let headers = prepareHeaders(req.headers, streaming);
    let body = req.body;
    if (body !== undefined && typeof body !== 'string' && !(body instanceof Uint8Array)) {
      throw new OutboundError('invalid_request', 'the body must be a string or bytes');
    }
    const follow = req.followRedirects === true;
    const tenant = req.tenantId;
    if (tenant !== undefined && typeof tenant !== 'string') throw new OutboundError('invalid_request', 'tenantId must be a string');

    for (let redirects = 0; ; redirects++) {
      // Every hop waits for a slot of its own origin; the deadline bounds the wait.
      const slot = this.#slots.acquire(url.origin, tenant ?? '', deadline.signal);
      const release = typeof slot === 'function' ? slot : await slot;
      const response = await beforeDeadline(this.#dispatch(url, method, headers, body, deadline.signal), deadline.signal, release);
      const location = response.headers.location;
      if (!follow || !REDIRECT_STATUSES.has(response.statusCode) || typeof location !== 'string') return { response, url, method };

      // Free the connection for reuse (undici); a large redirect body, or Node's, just closes it.
      if (response.body.dump) await response.body.dump().catch(() => {});
      else dropBody(response.body);
      if (redirects >= this.#maxRedirects) {
        throw new OutboundError('too_many_redirects', `more than ${this.#maxRedirects} redirects, last from ${describeTarget(url)}`);
      }
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new OutboundError('invalid_url', `redirect from ${describeTarget(url)} has an invalid Location`);
      }
      try {
        next = this.validateUrl(next.href);
      } catch (err) {
        const e = err as OutboundError;
        throw new OutboundError(e.code, `redirect from ${describeTarget(url)} refused: ${e.message}`);
      }
      // Fetch semantics: 303 turns anything but HEAD into GET; 301/302 turn POST into GET.
      const status = response.statusCode;
      if ((status === 303 && method !== 'HEAD') || ((status === 301 || status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        headers = withoutHeaders(headers, BODY_HEADERS);
      }
      // Credentials were meant for the origin that got them, not wherever it points.
      if (next.origin !== url.origin) headers = withoutHeaders(headers, CREDENTIAL_HEADERS);
      if (next.hash === '' && url.hash !== '') next.hash = url.hash;
      url = next;
      state.url = url;
    }
  }

  /** One hop, by undici, or by Node's client for a request with a Keep-Alive header (node-http.ts). */
  async #dispatch(url: URL, method: string, headers: Record<string, string | string[]>, body: string | Uint8Array | undefined, signal: AbortSignal): Promise<Answer> {
    if (Object.hasOwn(headers, 'keep-alive')) return this.#node.request({ url, method, headers, body, signal });
    return this.#agent.request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method: method as Dispatcher.HttpMethod,
      headers,
      body,
      signal,
      // The one total deadline governs; undici's own idle timers would only race it.
      headersTimeout: 0,
      bodyTimeout: 0,
    });
  }
}

type HopState = { url: URL | undefined };
/** `method` is the one the last hop was sent with (a redirect may have turned it into GET). */
type Hop = { response: Answer; url: URL; method: string };

/** One total deadline per call: connect, every redirect hop, headers and body. */
class Deadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  passed = false;

  constructor(ms: number) {
    // setTimeout treats anything above 2^31-1 ms as 1 ms; clamp rather than fire at once.
    this.#timer = setTimeout(() => {
      this.passed = true;
      this.#controller.abort(new OutboundError('timeout', `no complete response within ${ms} ms`));
    }, Math.min(ms, 2 ** 31 - 1));
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  clear(): void {
    clearTimeout(this.#timer);
  }
}

/** A call whose answer's head has arrived: the body is still to read, under `limit` and the deadline. */
type Opened = { hop: Hop; limit: number; deadline: Deadline };

/** The body of an opened call read whole; the deadline ends with it. */
async function readWhole({ hop, limit, deadline }: Opened): Promise<OutboundResponse> {
  try {
    const body = bodyless(hop) ? skipBody(hop.response) : await readLimited(hop.response, limit, hop.url);
    return { status: hop.response.statusCode, headers: responseHeaders(hop.response.headers), body, url: hop.url.href };
  } catch (err) {
    throw toOutboundError(err, hop.url, deadline.passed);
  } finally {
    deadline.clear();
  }
}

/**
 * The body of an opened call as a stream that errors with OutboundError (a timeout when the
 * deadline passes first) and stops at `limit` bytes; closing it ends the deadline and drops
 * the connection if the body was not read to its end.
 */
function streamBody({ hop: { response, url }, limit, deadline }: Opened): OutboundStream {
  const source = response.body;
  let seen = 0;
  const body = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      seen += chunk.length;
      if (seen > limit) callback(tooLarge(url, limit));
      else callback(null, chunk);
    },
  });
  source.on('error', (err) => body.destroy(toOutboundError(err, url, deadline.passed)));
  deadline.signal.addEventListener('abort', () => body.destroy(toOutboundError(undefined, url, true)), { once: true });
  body.on('close', () => {
    deadline.clear();
    if (!source.destroyed) source.destroy();
  });
  source.pipe(body);
  return { status: response.statusCode, headers: responseHeaders(response.headers), body, url: url.href };
}

/**
 * Reads the body, stopping (and dropping the connection) as soon as it passes the limit; a
 * declared length past it was refused before (#open).
 */
async function readLimited(response: Answer, limit: number, url: URL): Promise<Buffer> {
  const body = response.body;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw tooLarge(url, limit, response);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/**
 * The answer's head, or the deadline's error as soon as it passes. Neither client gives up on
 * an aborted request before its connection attempt ends (a slow DNS answer, a connect that
 * hangs until connectTimeoutMs): the call does not wait for that, and an answer arriving
 * afterwards has its body dropped.
 *
 * `release` gives back the call's slot (slots.ts) when its connection is free again: when the
 * request fails, or once the answer's body is done (read to its end or destroyed; both
 * transports' bodies then close), an abandoned answer's included.
 */
function beforeDeadline(sent: Promise<Answer>, signal: AbortSignal, release: () => void): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(signal.reason);
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
    sent.then(
      (answer) => {
        signal.removeEventListener('abort', abort);
        if (answer.body.closed) release();
        else answer.body.once('close', release);
        // Too late: the call was given up (and rejected) when the deadline passed.
        if (signal.aborted) dropBody(answer.body);
        else resolve(answer);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        release();
        reject(err);
      },
    );
  });
}

/**
 * Destroys a body nobody will read. undici then fails the request on it ("Request aborted"),
 * an 'error' event that, with no listener, would be an uncaught exception: it is swallowed.
 */
function dropBody(body: Readable): void {
  body.on('error', () => {});
  body.destroy();
}

/** A 204 or a 304: no body follows, whatever Content-Length says (a 304's is the length of what it stands for). */
function bodyless({ response }: Hop): boolean {
  return response.statusCode === 204 || response.statusCode === 304;
}

/**
 * The empty body of a bodyless answer, without reading it: undici fails the body of a 304 that
 * declares a length for the bytes that never come. That failure is heard and ignored, and the
 * body is drained rather than destroyed, so the connection can go back to its pool.
 */
function skipBody(response: Answer): Buffer {
  response.body.on('error', () => {});
  response.body.resume();
  return Buffer.alloc(0);
}

/**
 * The body length the answer declares; 0 for an answer to HEAD, a 204 or a 304, whose
 * Content-Length is the resource's (no bytes follow), so a HEAD on a large file, or a 304
 * standing for one, must not trip the size limit.
 */
function declaredLength(hop: Hop): number {
  const { response, method } = hop;
  if (method === 'HEAD' || bodyless(hop)) return 0;
  const raw = response.headers['content-length'];
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  return Number.isFinite(n) ? n : -1;
}

/** The error for a response past the limit; its body, when given, is dropped with its connection. */
function tooLarge(url: URL, limit: number, response?: Answer): OutboundError {
  if (response) dropBody(response.body);
  return new OutboundError('too_large', `response from ${describeTarget(url)} exceeds the ${limit}-byte limit`);
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw new TypeError(`${name} must be a positive number`);
  return value;
}

function perCall(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0) throw new OutboundError('invalid_request', `${name} must be a positive number`);
  return value;
}
