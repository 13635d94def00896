import { randomUUID } from 'node:crypto';
import { sleep } from './coffer.ts';

/**
 * The clients of the crash test. Nine requests in ten carry their own SVC-IDEMPOTENCY-KEY and
 * a payload no other request has (its sequence number is in the data and in metadata.seq),
 * and are sent again with the same key and body until the server acknowledges them with a
 * 201: a connection error (the server was killed) or a 5xx → retry after a moment; a 409
 * (the key is still held by a request on a connection that is going away) → retry too.
 * The tenth has no key, as a client that does not retry sends it: a create of that kind is
 * group-committed with others (src/db/group-commit.ts). It is sent once; acknowledged, its
 * token must exist like any other; not acknowledged, it may or may not.
 */

/** One token a request asks for: which leaf of the body, its type and its data. */
export type Part = { part: string; type: string; data: unknown };

export type Request = {
  seq: number;
  /** null: sent once, without SVC-IDEMPOTENCY-KEY. */
  key: string | null;
  path: '/tokens' | '/tokenize';
  body: unknown;
  parts: Part[];
  /** Token ids from the acknowledgement, in the order of `parts`; empty until acknowledged. */
  ids: string[];
  acked: boolean;
  /** The acknowledgement was a replay of a reply stored by an earlier attempt. */
  replayedAck: boolean;
  attempts: number;
  /** A 4xx other than 409: the request can never succeed (a bug in the server or the test). */
  rejected?: string;
  /** A request without a key that got no 201: whether it took effect is unknown, and it is not retried. */
  unknown?: boolean;
};

export type LoadStats = { sent: number; networkErrors: number; conflicts: number; serverErrors: number; replayedAcks: number };

const YEAR = new Date().getUTCFullYear() + 3;

/** A Luhn-valid 16-digit Visa-range number unique to the sequence number. */
export function cardNumber(seq: number): string {
  const body = `49${String(seq).padStart(13, '0')}`;
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    let d = Number(body[body.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return body + String((10 - (sum % 10)) % 10);
}

/**
 * Six in ten requests create a `token`, two a `card`, one tokenizes both at once (all or
 * nothing), each with a key; one creates a `token` without a key.
 */
export function makeRequest(seq: number): Request {
  const meta = (part: string) => ({ seq: String(seq), part });
  const token: Part = { part: 'a', type: 'token', data: { n: seq, note: `crash test value ${seq}` } };
  const card: Part = { part: 'b', type: 'card', data: { number: cardNumber(seq), expiration_month: 1 + (seq % 12), expiration_year: YEAR } };
  const base = { seq, key: randomUUID(), ids: [], acked: false, replayedAck: false, attempts: 0 };
  switch (seq % 10) {
    case 7:
    case 8:
      return { ...base, path: '/tokens', parts: [card], body: { type: card.type, data: card.data, metadata: meta('b') } };
    case 6:
      return { ...base, key: null, path: '/tokens', parts: [token], body: { type: token.type, data: token.data, metadata: meta('a') } };
    case 9:
      return {
        ...base,
        path: '/tokenize',
        parts: [token, card],
        body: {
          a: { type: token.type, data: token.data, metadata: meta('a') },
          b: { type: card.type, data: card.data, metadata: meta('b') },
        },
      };
    default:
      return { ...base, path: '/tokens', parts: [token], body: { type: token.type, data: token.data, metadata: meta('a') } };
  }
}

export type Sent = { status: number; replayed: boolean; body: any } | { error: string };

/** One POST of the request; never throws. */
export async function post(url: string, apiKey: string, req: { path: string; key: string | null; body: unknown }, timeoutMs = 15_000): Promise<Sent> {
  try {
    const res = await fetch(url + req.path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'svc-api-key': apiKey, ...(req.key === null ? {} : { 'svc-idempotency-key': req.key }) },
      body: JSON.stringify(req.body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: res.status, replayed: res.headers.get('svc-idempotent-replayed') === 'true', body };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** The token ids an acknowledgement names, in the order of the request's parts. */
export function idsOf(req: Request, body: any): string[] | undefined {
  const ids = req.path === '/tokens' ? [body?.id] : req.parts.map((p) => body?.[p.part]?.id);
  return ids.every((id) => typeof id === 'string') ? ids : undefined;
}

/** Sends until acknowledged, rejected, `deadline` (performance.now()) passes, or `abort.aborted`. */
export async function sendUntilAcked(url: string, apiKey: string, req: Request, stats: LoadStats, deadline: number, abort?: AbortSignal): Promise<void> {
  await retryUntilAcked(req, stats, deadline, abort, () => post(url, apiKey, req), (res) => {
    const ids = idsOf(req, res.body);
    if (!ids) return `201 without token ids: ${JSON.stringify(res.body).slice(0, 200)}`;
    req.ids = ids;
    req.replayedAck = res.replayed;
    return undefined;
  });
}

/** What the retry loop needs of a request: whether it is done, and how it went. */
export type Retried = { key: string | null; acked: boolean; attempts: number; rejected?: string; unknown?: boolean };

/**
 * The clients' one retry loop: sends until a 201 (which `created` takes in, or refuses with a
 * reason), a 4xx other than 409 (rejected), `deadline` (performance.now()) or `abort`. A
 * connection error, a 409 (the key still held by a dying request) or a 5xx is sent again; a
 * request without a key is sent once, as a client that cannot retry safely sends it.
 */
export async function retryUntilAcked(
  req: Retried,
  stats: LoadStats,
  deadline: number,
  abort: AbortSignal | undefined,
  sendOnce: () => Promise<Sent>,
  created: (res: Exclude<Sent, { error: string }>) => string | undefined,
): Promise<void> {
  while (!req.acked && performance.now() < deadline && !abort?.aborted) {
    req.attempts++;
    stats.sent++;
    const res = await sendOnce();
    if (req.key === null && ('error' in res || res.status !== 201)) {
      // Without a key a retry could create a second one: the outcome stays unknown.
      if ('error' in res) stats.networkErrors++;
      req.unknown = true;
      return;
    }
    if ('error' in res) {
      stats.networkErrors++;
      await sleep(50 + Math.random() * 100);
    } else if (res.status === 201) {
      const refused = created(res);
      if (refused) {
        req.rejected = refused;
        return;
      }
      req.acked = true;
      if (res.replayed) stats.replayedAcks++;
    } else if (res.status === 409) {
      stats.conflicts++;
      await sleep(50 + Math.random() * 100);
    } else if (res.status >= 500) {
      stats.serverErrors++;
      await sleep(100);
    } else {
      req.rejected = `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
      return;
    }
  }
}

/**
 * `clients` concurrent clients, each sending one request after another until `stopAt`
 * (performance.now()), then finishing (acknowledging) the one in hand until `deadline`.
 */
export async function drive(opts: {
  url: string;
  apiKey: string;
  clients: number;
  stopAt: number;
  deadline: number;
  requests: Request[];
  stats: LoadStats;
  abort: AbortSignal;
}): Promise<void> {
  let seq = opts.requests.length;
  await Promise.all(
    Array.from({ length: opts.clients }, async () => {
      while (performance.now() < opts.stopAt && !opts.abort.aborted) {
        const req = makeRequest(++seq);
        opts.requests.push(req);
        await sendUntilAcked(opts.url, opts.apiKey, req, opts.stats, opts.deadline, opts.abort);
      }
    }),
  );
}
