import http from 'node:http';
import net from 'node:net';
import type { Readable } from 'node:stream';
import type { buildConnector } from 'undici';
import { OutboundError } from './errors.ts';
import { stripBrackets } from './policy.ts';

/** What both transports hand back once an answer's head has arrived. */
export type Answer = {
  statusCode: number;
  headers: Record<string, string | string[] | undefined>;
  /** undici's body has dump(); Node's IncomingMessage does not. */
  body: Readable & { dump?: () => Promise<unknown> };
};

export type NodeHttpOptions = {
  /** The guarded connector undici uses: the same address checks on every new connection. */
  connector: buildConnector.connector;
  /** Pooled connections per origin (the client admits no more requests than that at once). */
  connections: number;
  /** The longest an idle pooled connection is kept, whatever the destination's Keep-Alive asks. */
  keepAliveMaxMs: number;
};

type Send = { url: URL; method: string; headers: Record<string, string | string[]>; body: string | Uint8Array | undefined; signal: AbortSignal };

/**
 * Node's own HTTP client, for the one request undici refuses to send: one carrying a
 * `Keep-Alive` header (a proxy caller's SVC-PROXY-KEEP-ALIVE). Its sockets come from the
 * same guarded connector as undici's, so every address check holds; it pools keep-alive
 * connections per origin in pools of its own, closed with the client.
 */
export class NodeHttpTransport {
  readonly #agents: Record<'http:' | 'https:', http.Agent>;

  constructor(options: NodeHttpOptions) {
    this.#agents = { 'http:': guardedAgent('http:', options), 'https:': guardedAgent('https:', options) };
  }

  async request({ url, method, headers, body, signal }: Send): Promise<Answer> {
    const protocol = url.protocol === 'https:' ? 'https:' : 'http:';
    // As undici: the pool owns the connection, so a caller may only ask to close it or keep it.
    const connection = headers.connection;
    if (connection !== undefined && !(typeof connection === 'string' && /^(close|keep-alive)$/i.test(connection.trim()))) {
      throw new OutboundError('invalid_request', 'the connection header may only be close or keep-alive');
    }
    // Node's Agent counts a connection only once it is open, so its maxSockets lets any number
    // be opened at once through the asynchronous connector: the client lets at most `connections`
    // requests per origin be in flight, over both transports (src/outbound/slots.ts).
    return new Promise((resolve, reject) => {
      let req: http.ClientRequest;
      try {
        req = http.request({
          agent: this.#agents[protocol],
          host: stripBrackets(url.hostname),
          port: Number(url.port || (protocol === 'https:' ? 443 : 80)),
          method,
          path: `${url.pathname}${url.search}`,
          // As undici sends them: the URL's host, and the body's exact length when there is one.
          headers: { ...headers, host: url.host, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
          signal,
        });
      } catch (err) {
        // A header Node will not send (a control character, a character past U+00FF): nothing was sent.
        reject(err);
        return;
      }
      req.on('error', reject);
      req.once('response', (res) => {
        // Repeated headers as arrays and single ones as strings (Set-Cookie too), as undici gives them.
        const answer: Answer['headers'] = {};
        for (const [name, values] of Object.entries(res.headersDistinct)) {
          if (values) answer[name] = values.length > 1 ? values : values[0];
        }
        resolve({ statusCode: res.statusCode ?? 502, headers: answer, body: res });
      });
      req.end(body);
    });
  }

  close(): void {
    for (const agent of Object.values(this.#agents)) agent.destroy();
  }
}

function guardedAgent(protocol: 'http:' | 'https:', options: NodeHttpOptions): http.Agent {
  const agent = new http.Agent({
    keepAlive: true,
    maxSockets: options.connections,
    maxFreeSockets: options.connections,
    scheduling: 'lifo',
    // Node keeps an idle socket this long, or less when the destination's Keep-Alive says so.
    timeout: options.keepAliveMaxMs,
  });
  // A socket handed over asynchronously, once connected: Node's Agent takes it through the callback.
  agent.createConnection = ((opts: http.ClientRequestArgs, callback: (err: Error | null, socket?: net.Socket) => void) => {
    const hostname = String(opts.host);
    options.connector(
      {
        hostname,
        host: hostname,
        protocol,
        port: String(opts.port),
        servername: protocol === 'https:' && net.isIP(hostname) === 0 ? hostname : undefined,
        localAddress: null,
        httpSocket: undefined,
      },
      (err, socket) => (err ? callback(err) : callback(null, socket as net.Socket)),
    );
    return undefined;
  }) as unknown as http.Agent['createConnection'];
  return agent;
}
