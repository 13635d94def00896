import { isDeepStrictEqual } from 'node:util';
import pg from 'pg';
import { idsOf, post, type Request } from './load.ts';
import type { Receiver } from './receiver.ts';
import { sleep } from './coffer.ts';

/** Runs `fn` over `items` with at most `n` at once. */
export async function pool<T>(items: T[], n: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/**
 * Every acknowledged token exists and decrypts to the data that was sent: GET with a key
 * whose rule reveals the data. Returns how many acknowledged tokens are missing or wrong.
 */
export async function checkAcknowledged(url: string, apiKey: string, acked: Request[], problems: string[]): Promise<number> {
  let lost = 0;
  await pool(acked, 16, async (req) => {
    for (let i = 0; i < req.parts.length; i++) {
      const id = req.ids[i];
      let why: string | undefined;
      try {
        const res = await fetch(`${url}/tokens/${encodeURIComponent(id)}`, { headers: { 'svc-api-key': apiKey }, signal: AbortSignal.timeout(15_000) });
        const body = (await res.json()) as { data?: unknown; type?: string; metadata?: Record<string, string> };
        if (res.status !== 200) why = `GET answered ${res.status}`;
        else if (body.type !== req.parts[i].type) why = `type ${body.type}`;
        else if (!isDeepStrictEqual(body.data, req.parts[i].data)) why = 'data differs from what was sent';
        else if (body.metadata?.seq !== String(req.seq)) why = `metadata.seq ${body.metadata?.seq}`;
      } catch (err) {
        why = `GET failed: ${(err as Error).message}`;
      }
      if (why) {
        lost++;
        if (problems.length < 50) problems.push(`acknowledged token ${id} (seq ${req.seq}${req.replayedAck ? ', acknowledged by a replay' : ''}): ${why}`);
      }
    }
  });
  return lost;
}

/** After all the crashes, each acknowledged request sent again with its key replays the same reply. */
export async function checkReplays(url: string, apiKey: string, acked: Request[], problems: string[]): Promise<number> {
  let bad = 0;
  await pool(acked, 16, async (req) => {
    const res = await post(url, apiKey, req);
    let why: string | undefined;
    if ('error' in res) why = res.error;
    else if (res.status !== 201) why = `status ${res.status}`;
    else if (!res.replayed) why = 'not marked as a replay (the request ran again)';
    else if (!isDeepStrictEqual(idsOf(req, res.body), req.ids)) why = `other token ids ${JSON.stringify(idsOf(req, res.body))} than acknowledged ${JSON.stringify(req.ids)}`;
    if (why) {
      bad++;
      if (problems.length < 50) problems.push(`replay of seq ${req.seq}: ${why}`);
    }
  });
  return bad;
}

export type StoreCheck = { duplicates: number; partial: number; unexpected: number; tokens: number };

/**
 * Counted in the database: an idempotency key (one seq) that produced more tokens than its
 * request asks for is a duplicate; fewer but some is a partial commit (tokenize is all or
 * nothing); a token with a seq no request had is unexpected. The payment clients' cards
 * (metadata.purpose `payments`, made before the load) are not the token load's.
 */
export async function checkStore(sql: pg.Client, tenantId: string, requests: Request[], problems: string[]): Promise<StoreCheck> {
  const bySeq = new Map(requests.map((r) => [String(r.seq), r]));
  const { rows } = await sql.query<{ seq: string; n: number; parts: string[] }>(
    `SELECT metadata->>'seq' AS seq, count(*)::int AS n, array_agg(metadata->>'part' ORDER BY metadata->>'part') AS parts
     FROM tokens WHERE tenant_id = $1 AND metadata->>'purpose' IS DISTINCT FROM 'payments' GROUP BY 1`,
    [tenantId],
  );
  const out: StoreCheck = { duplicates: 0, partial: 0, unexpected: 0, tokens: 0 };
  for (const row of rows) {
    out.tokens += row.n;
    const req = bySeq.get(row.seq);
    if (!req) {
      out.unexpected += row.n;
      problems.push(`${row.n} token(s) with metadata.seq ${row.seq}, which no request had`);
    } else if (row.n > req.parts.length) {
      out.duplicates++;
      if (problems.length < 50) problems.push(`idempotency key of seq ${row.seq} produced ${row.n} tokens (parts ${row.parts.join(',')}), its request asks for ${req.parts.length}`);
    } else if (row.n < req.parts.length) {
      out.partial++;
      if (problems.length < 50) problems.push(`seq ${row.seq}: only ${row.n} of ${req.parts.length} tokens committed (not all or nothing)`);
    }
  }
  return out;
}

export type JobCheck = {
  events: number;
  delivered: number;
  /** Events whose delivery never arrived, or whose job is missing or dead-lettered. */
  lost: number;
  /** Extra deliveries of an event already delivered, each by a later server process (at-least-once after a crash). */
  redelivered: number;
  /** Extra deliveries within one server process after an attempt the server saw fail: a retry, allowed. */
  retried: number;
  /** Other extra deliveries within one server process, or overlapping ones: a job that ran twice. */
  ranTwice: number;
};

/**
 * Waits (bounded) for the queue to drain, then checks the outbox end to end: one
 * token.created event per token, one webhook.deliver job per event, every job done, and
 * every event delivered to the receiver.
 */
export async function checkJobs(sql: pg.Client, tenantId: string, receiver: Receiver, boundMs: number, problems: string[]): Promise<JobCheck> {
  const end = performance.now() + boundMs;
  let events: { id: string }[] = [];
  let open = 0;
  for (;;) {
    events = (await sql.query<{ id: string }>(`SELECT id FROM events WHERE tenant_id = $1 AND type = 'token.created'`, [tenantId])).rows;
    open = (await sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE tenant_id = $1 AND kind = 'webhook.deliver' AND status IN ('pending', 'running')`,
      [tenantId],
    )).rows[0].n;
    const undelivered = events.filter((e) => !receiver.receipts.has(e.id)).length;
    if ((open === 0 && undelivered === 0) || performance.now() > end) break;
    await sleep(250);
  }
  if (open > 0) problems.push(`${open} webhook jobs still pending or running ${Math.round(boundMs / 1000)} s after the load ended`);

  const out: JobCheck = { events: events.length, delivered: 0, lost: 0, redelivered: 0, retried: 0, ranTwice: receiver.overlaps };
  if (receiver.overlaps) problems.push(`${receiver.overlaps} deliveries arrived while another delivery of the same event was still open (a job ran twice at once)`);
  if (receiver.malformed) problems.push(`${receiver.malformed} malformed deliveries`);

  const orphanEvents = (await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM events e WHERE e.tenant_id = $1 AND e.type = 'token.created'
       AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.tenant_id = e.tenant_id AND t.id = e.entity_id)`,
    [tenantId],
  )).rows[0].n;
  if (orphanEvents) problems.push(`${orphanEvents} token.created events for tokens that do not exist (phantom)`);
  const eventless = (await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM tokens t WHERE t.tenant_id = $1
       AND (SELECT count(*) FROM events e WHERE e.tenant_id = t.tenant_id AND e.type = 'token.created' AND e.entity_id = t.id) <> 1`,
    [tenantId],
  )).rows[0].n;
  if (eventless) problems.push(`${eventless} tokens without exactly one token.created event`);

  const jobs = new Map<string, { status: string; attempts: number }[]>();
  const { rows } = await sql.query<{ event_id: string; status: string; attempts: number }>(
    `SELECT payload->'event'->>'id' AS event_id, status, attempts FROM jobs WHERE tenant_id = $1 AND kind = 'webhook.deliver'`,
    [tenantId],
  );
  for (const r of rows) jobs.set(r.event_id, [...(jobs.get(r.event_id) ?? []), r]);
  // A delivery the server saw fail (timeout, error) is retried by design, by the same process too.
  const failed = new Set((await sql.query<{ event_id: string }>(
    `SELECT DISTINCT event_id FROM webhook_deliveries WHERE tenant_id = $1 AND NOT succeeded`,
    [tenantId],
  )).rows.map((r) => r.event_id));

  for (const { id } of events) {
    const js = jobs.get(id) ?? [];
    const receipts = receiver.receipts.get(id) ?? [];
    let why: string | undefined;
    if (js.length !== 1) why = `${js.length} delivery jobs`;
    else if (js[0].status !== 'done') why = `its job is ${js[0].status} after ${js[0].attempts} attempts`;
    else if (receipts.length === 0) why = 'never delivered though its job is done';
    if (why) {
      out.lost++;
      if (problems.length < 50) problems.push(`event ${id}: ${why}`);
    }
    if (receipts.length > 0) out.delivered++;
    // At-least-once: a process killed between delivering and recording it leaves the job to
    // be run again by the next process. The same process delivering an event twice is not that.
    const generations = new Set(receipts.map((r) => r.generation));
    out.redelivered += generations.size > 0 ? generations.size - 1 : 0;
    const twice = receipts.length - generations.size;
    if (twice > 0 && failed.has(id)) out.retried += twice;
    else if (twice > 0) {
      out.ranTwice += twice;
      if (problems.length < 50) problems.push(`event ${id} delivered ${receipts.length} times, ${twice} extra by one server process`);
    }
  }
  for (const id of receiver.receipts.keys()) {
    if (!jobs.has(id)) problems.push(`delivery of unknown event ${id}`);
  }
  return out;
}
