/**
 * The `proxy.minimal` baseline: the least a reverse proxy in Coffer's runtime does for one
 * call. A node:http server forwards each request's method, path, headers and body to
 * DESTINATION (an origin: the baseline child's echo) over an undici pool configured as
 * Coffer's outbound client configures its own (src/outbound/client.ts: 64 connections per
 * origin, idle connections kept at most 30 s, no idle timers of undici's racing the call),
 * and streams the answer back. No auth, no rules, no database, no address check: what
 * `proxy.passthrough` costs beyond this is what Coffer adds.
 *
 * Given `tokens` (bench/minimal-token-work.ts), it is `proxy.minimal_token`: the body's token
 * expressions are replaced before it goes on, the least `proxy.one_token` asks for.
 */
import http from 'node:http';
import { pipeline } from 'node:stream';
import { Agent, type Dispatcher } from 'undici';
import { databaseFromEnv, tokenWorkFromEnv } from './minimal-env.ts';
import type { TokenWork } from './minimal-token-work.ts';

/** Headers that describe one connection, not the message (RFC 9110, 7.6.1), plus the Host the pool sets. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

/** `headers` without the hop-by-hop ones; undici's answer headers and node's request headers share the shape. */
function endToEnd(headers: http.IncomingHttpHeaders | Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

/**
 * The request's body, read whole (undefined when there is none), as Coffer reads it: the
 * answer is what is streamed. (Handing undici the request itself as a stream body was not
 * measurably cheaper for a body this small, see docs/benchmarks.md.)
 */
function readAll(req: http.IncomingMessage): Promise<Buffer | undefined> {
  if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return Promise.resolve(undefined);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export function createMinimalProxy(destination: string, tokens?: TokenWork): http.Server {
  const origin = new URL(destination).origin;
  const agent = new Agent({ connections: 64, keepAliveMaxTimeout: 30_000 });
  const forward = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const received = await readAll(req);
    const headers = endToEnd(req.headers);
    const body = tokens && received ? await tokens.detokenize(received) : received;
    // undici sends the length of the body it is given: the caller's would be wrong for a detokenized one.
    if (body !== received) delete headers['content-length'];
    const answer = await agent.request({
      origin,
      path: req.url!,
      method: req.method as Dispatcher.HttpMethod,
      headers,
      body,
      headersTimeout: 0,
      bodyTimeout: 0,
    });
    // The caller may have gone while the destination answered: nothing to send to.
    if (res.destroyed) return void answer.body.on('error', () => {}).destroy();
    res.writeHead(answer.statusCode, endToEnd(answer.headers));
    pipeline(answer.body, res, () => {});
  };
  const server = http.createServer((req, res) => {
    if (req.url === '/health/ready') return void res.end('{"status":"ready"}');
    forward(req, res).catch(() => {
      if (res.destroyed || res.headersSent) return;
      res.statusCode = 502;
      res.end();
    });
  });
  server.on('close', () => void agent.close());
  return server;
}

// Started as a child by bench/run.ts: PORT, HOST and DESTINATION from the environment; for
// proxy.minimal_token also TOKEN_IDS (comma-separated), TOKEN_CARD (JSON) and the database (PG*).
if (import.meta.main) {
  const env = process.env;
  const server = createMinimalProxy(env.DESTINATION!, await tokenWorkFromEnv(env, databaseFromEnv(env)));
  server.keepAliveTimeout = 72_000;
  server.listen(Number(env.PORT), env.HOST ?? '127.0.0.1');
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
}
