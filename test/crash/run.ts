/**
 * `npm run test:crash`: durability under kill -9.
 *
 * Coffer (`src/cli.ts serve`, a child process) runs on PostgreSQL — always the embedded
 * server in a fresh DATA_DIR, and also the one in CRASH_DATABASE_URL when that is set (in a
 * scratch database created there and dropped after, when the URL's user may create one).
 * Concurrent clients create tokens, each request under its own SVC-IDEMPOTENCY-KEY with a
 * payload of its own (`token`, `card`, and `/tokenize` of both at once); a webhook
 * subscribed to token.created points at a local receiver, so every token also puts a job
 * in the queue. Meanwhile the server is killed with SIGKILL at random moments and started
 * again on the same DATA_DIR and port. On the embedded database the kills vary (see
 * KillMode): the server alone, leaving its PostgreSQL orphaned for the next one to adopt;
 * also the postmaster, or every PostgreSQL process, leaving a stale postmaster.pid and a
 * cluster that needs crash recovery; a server killed again part-way through its own start;
 * and one PostgreSQL session killed under a running server (PostgreSQL then resets every
 * session and recovers, and the server must carry on without a restart). Clients send
 * every unacknowledged request again with its key until it is
 * acknowledged (connection error or 5xx → retry; 409, the key still held by a request on
 * a connection that is going away → retry after a moment; any other 4xx fails the run).
 *
 * Payments run alongside (payments.ts): CRASH_PAY_CLIENTS more clients (default 4), retrying
 * the same way under their own SVC-IDEMPOTENCY-KEY per request, create transactions (card
 * tokens of 4242 4242 4242 4242 made before the load, intent `capture` or `authorize`, the
 * request's seq in metadata.crash_seq) through a `stripe` connection on the local fake of
 * Stripe's API (test/processors/stripe-fake.ts), and partially refund the ones they saw
 * captured. The fake runs in this process, so it survives every kill and remembers every
 * request; the server runs with TRANSACTION_RESUME_AFTER_SECONDS=2 and SWEEP_INTERVAL_SECONDS=1,
 * so calls a kill left unanswered are made again by the sweep within the run.
 *
 * What is asserted, once the load has stopped and the queue drained:
 * - lost (L): every acknowledged token exists and decrypts to the data sent (GET with a key
 *   whose rule reveals it), those of the one request in ten sent without an idempotency key
 *   (group-committed) included; and no job is lost: each token has exactly one token.created
 *   event, each event exactly one delivery job, every job is `done` (none dead-lettered),
 *   and the receiver got every event. L counts acknowledged tokens missing or wrong plus
 *   events never delivered.
 * - duplicates (D): no idempotency key produced more tokens than its request asks for,
 *   counted in SQL by metadata.seq — after every request that needed a retry, and a sample
 *   of the others, was sent once more and had to replay its stored reply, same token ids.
 *   D counts such keys. A /tokenize that committed only part of its tokens fails the run.
 * - payments (after the queue drained, and then at most 20 s until no transaction or refund
 *   waits on the processor): every acknowledged transaction exists with metadata.crash_seq
 *   and the status its reply gave or a later one, every acknowledged refund exists with its
 *   amount (a miss adds to L); no idempotency key made two transactions (adds to D); none is
 *   left `pending` or `processing`, no refund pending or `processing` (stuck, S); no double
 *   charge (X): at most one PaymentIntent per transaction, none whose reconciliation id or
 *   idempotency key names no transaction row, no refund sent to Stripe under a key naming no
 *   refund row, and each PaymentIntent's amount refunded at Stripe is the sum of its
 *   transaction's succeeded and processing refunds; every transaction's refunded_amount is that
 *   sum and at most its captured_amount, and a captured one's captured_amount is what Stripe
 *   received (otherwise the run fails).
 * - jobs run at most once per process: webhook deliveries are at-least-once, so an event
 *   delivered again by a later process (the earlier one was killed between delivering and
 *   recording it) is reported as `redelivered` and allowed; an event delivered twice by
 *   one process, or two deliveries of one event open at the receiver at once, fails
 *   (unless the server recorded a failed attempt for it: that retry is by design).
 * - restarts are clean: no server exits unless the test kills or stops it; every start
 *   reaches "coffer ready" (after `backend`: /health/ready) within CRASH_RESTART_BOUND_MS,
 *   every request with a key is acknowledged within 30 s after the load stops (no key stuck
 *   behind a 409; one without a key is sent once), and the final SIGTERM exits 0 and stops the embedded PostgreSQL.
 *
 * The last line printed is `crash: acknowledged=N lost=L duplicates=D restarts=R stuck=S
 * double_charges=X`, summed over the databases (N counts token and payment requests; R = kills
 * recovered from: the server restarted and ready, or after `backend` its database back); the
 * exit status is non-zero unless L, D, S and X are 0 and nothing else above failed. Settings:
 * CRASH_SECONDS (seconds of load per database, default 30; a run takes about 20 s more per
 * database), CRASH_KILLS (default 5), CRASH_CLIENTS (16), CRASH_PAY_CLIENTS (4), CRASH_SEED (kill moments and kinds),
 * CRASH_RESTART_BOUND_MS (30000), CRASH_DATABASE_URL, CRASH_LOG_DIR (keep server logs).
 * Everything listens on and connects to 127.0.0.1 only.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { alive, clientBackends, Coffer, freePort, killPostgres, sleep } from './coffer.ts';
import { drive, type LoadStats, type Request } from './load.ts';
import { startStripeFake, type StripeFake } from '../processors/stripe-fake.ts';
import { checkPayments, drivePayments, type PayRequest, SUCCESS_CARD } from './payments.ts';
import { Receiver } from './receiver.ts';
import { checkAcknowledged, checkJobs, checkReplays, checkStore } from './verify.ts';

const num = (name: string, fallback: number) => {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number`);
  return n;
};
const SECONDS = num('CRASH_SECONDS', 30);
const KILLS = Math.floor(num('CRASH_KILLS', 5));
const CLIENTS = Math.max(1, Math.floor(num('CRASH_CLIENTS', 16)));
const PAY_CLIENTS = Math.floor(num('CRASH_PAY_CLIENTS', 4));
const RESTART_BOUND_MS = num('CRASH_RESTART_BOUND_MS', 30_000);
const SEED = Math.floor(num('CRASH_SEED', Date.now() % 1_000_000));
/** After the load stops: how long unacknowledged requests are retried, and the queue may take to drain. */
const ACK_WINDOW_MS = 30_000;
const DRAIN_BOUND_MS = 30_000;
/** After the queue drained: how long transactions and refunds may still wait on the processor (the sweep resumes them). */
const SETTLE_BOUND_MS = 20_000;
/** How many requests acknowledged at their first send are sent again (besides every retried one). */
const REPLAY_SAMPLE = 500;

/**
 * What one kill takes down: the server alone (its embedded PostgreSQL is orphaned and must
 * be adopted), or also the postmaster (its backends and auxiliary processes linger a
 * moment), or every PostgreSQL process (a stale postmaster.pid, crash recovery); `+startup`
 * then kills the next server again part-way through its start (starting or adopting
 * PostgreSQL, migrating, …) before starting one that is left to serve. `backend` kills one
 * of the server's PostgreSQL sessions instead, and the server is left running: PostgreSQL
 * then ends every session and recovers from the crash, and the server must carry on.
 */
type KillMode = 'server' | 'server+postmaster' | 'server+database' | 'server+database+startup' | 'server+startup' | 'backend';
type Result = { acknowledged: number; lost: number; duplicates: number; restarts: number; stuck: number; double_charges: number; failed: boolean };

/** mulberry32: kill moments and kinds follow CRASH_SEED (the timing of the load does not). */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = rng(SEED);

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function call(url: string, key: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(url + p, {
    method,
    headers: { 'svc-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/** The kinds of kill for one run: on the embedded database each kind in turn, shuffled; elsewhere only the server's. */
function killPlan(embedded: boolean): KillMode[] {
  const kinds: KillMode[] = embedded
    ? ['server', 'server+database', 'server+postmaster', 'server+database+startup', 'backend']
    : ['server', 'server+startup'];
  const plan = Array.from({ length: KILLS }, (_, i) => kinds[i % kinds.length]);
  for (let i = plan.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [plan[i], plan[j]] = [plan[j], plan[i]];
  }
  return plan;
}

/** Cleanup of the run in progress, for the watchdog. */
let emergency: (() => Promise<void>) | undefined;

async function crashRun(name: string, databaseUrl: string | undefined): Promise<Result> {
  const tag = `crash[${name}]`;
  const problems: string[] = [];
  const result: Result = { acknowledged: 0, lost: 0, duplicates: 0, restarts: 0, stuck: 0, double_charges: 0, failed: false };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-crash-'));
  const receiver = new Receiver();
  // Stripe (its fake) is in this process: it survives every kill, as the real one would.
  const stripe: StripeFake = await startStripeFake();
  const coffer = new Coffer({
    port: await freePort(),
    dataDir,
    env: {
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      OUTBOUND_ALLOWLIST: '127.0.0.1',
      JOB_POLL_MS: '50',
      JOB_CONCURRENCY: '20',
      // A job whose process was killed is claimed again once its lease lapses.
      JOB_LEASE_SECONDS: '3',
      JOB_BACKOFF_BASE_MS: '100',
      JOB_BACKOFF_MAX_MS: '1000',
      WEBHOOK_RETRY_SCHEDULE: '100ms,200ms,400ms,1s',
      WEBHOOK_TIMEOUT_MS: '5000',
      // A processor call a kill left unanswered is made again within the run.
      TRANSACTION_RESUME_AFTER_SECONDS: '2',
      SWEEP_INTERVAL_SECONDS: '1',
    },
  });
  const requests: Request[] = [];
  const stats: LoadStats = { sent: 0, networkErrors: 0, conflicts: 0, serverErrors: 0, replayedAcks: 0 };
  const payments: PayRequest[] = [];
  const payStats: LoadStats = { sent: 0, networkErrors: 0, conflicts: 0, serverErrors: 0, replayedAcks: 0 };
  const abort = new AbortController();
  let sql: pg.Client | undefined;
  const cleanup = async () => {
    abort.abort();
    await sql?.end().catch(() => {});
    await coffer.kill();
    // Whatever happened, leave no PostgreSQL of ours behind.
    const pgPid = databaseUrl ? undefined : coffer.postmasterPid();
    if (pgPid !== undefined && alive(pgPid)) await killPostgres(pgPid, 'group', dataDir);
    await receiver.close();
    await stripe.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  emergency = cleanup;
  try {
    await receiver.start();
    const init = await coffer.cli(['init', '--json', '--tenant-name', 'Crash test']);
    if (init.code !== 0) throw new Error(`coffer init failed: ${init.stderr}`);
    const { tenant_id: tenantId, api_key: adminKey } = JSON.parse(init.stdout) as { tenant_id: string; api_key: string };

    const first = await coffer.start(RESTART_BOUND_MS);
    say(`${tag}: started in ${first.readyMs} ms (seed ${SEED}, ${CLIENTS} clients, ${SECONDS} s of load, ${KILLS} kills)`);
    const app = await call(coffer.url, adminKey, 'POST', '/applications', {
      name: 'crash-test clients',
      type: 'private',
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
    });
    await call(coffer.url, adminKey, 'POST', '/webhooks', { name: 'crash-test receiver', url: receiver.url, events: ['token.created'] });
    const apiKey = app.key as string;
    const payer = (await call(coffer.url, adminKey, 'POST', '/applications', {
      name: 'crash-test payments',
      type: 'private',
      permissions: ['orchestration:transaction:read'],
      rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:use'] }],
    })).key as string;
    const connection = await call(coffer.url, adminKey, 'POST', '/orchestration/connections', {
      name: 'crash-test stripe', processor: 'stripe', settings: { base_url: stripe.url }, credentials: { secret_key: stripe.secretKey },
    });
    const cards: string[] = [];
    for (let i = 0; i < 4; i++) {
      const card = { number: SUCCESS_CARD, expiration_month: 1 + i, expiration_year: new Date().getUTCFullYear() + 3, cvc: '123' };
      cards.push((await call(coffer.url, payer, 'POST', '/tokens', { type: 'card', data: card, metadata: { purpose: 'payments' } })).id);
    }

    const t0 = performance.now();
    const stopAt = t0 + SECONDS * 1000;
    const load = Promise.all([
      drive({ url: coffer.url, apiKey, clients: CLIENTS, stopAt, deadline: stopAt + ACK_WINDOW_MS, requests, stats, abort: abort.signal }),
      drivePayments({
        url: coffer.url, apiKey: payer, connectionId: connection.id, tokens: cards, clients: PAY_CLIENTS, stopAt, deadline: stopAt + ACK_WINDOW_MS,
        requests: payments, stats: payStats, abort: abort.signal,
      }),
    ]);

    // One kill at a random moment in each slice of the load, each after at least a second of service.
    const plan = killPlan(!databaseUrl);
    const slice = (SECONDS * 1000) / (plan.length + 1);
    let readyAt = performance.now();
    let readyMax = first.readyMs;
    let startupKills = 0;
    for (let i = 0; i < plan.length; i++) {
      const at = Math.max(t0 + slice * (i + 0.5) + random() * slice, readyAt + 1000);
      await sleep(at - performance.now());
      const mode = plan[i];
      const pgPid = databaseUrl ? undefined : coffer.postmasterPid();
      const backends = pgPid === undefined ? [] : clientBackends(pgPid);
      if (mode === 'backend' && backends.length > 0) {
        const victim = backends[Math.floor(random() * backends.length)];
        process.kill(victim, 'SIGKILL');
        // A job that was running while the database went down may rightly run again: its
        // delivery under way arrives within a moment, and it runs again only once its lease
        // (JOB_LEASE_SECONDS) lapses, under the next generation. Not after the recovery: that
        // can take as long as the lease, and the rerun would then fall into the same generation.
        receiver.generation++;
        await sleep(1000);
        receiver.generation++;
        const waited = await untilReady(coffer, RESTART_BOUND_MS);
        const recovered = waited === undefined ? undefined : waited + 1000;
        if (recovered === undefined) {
          const what = coffer.running ? `did not answer /health/ready within ${RESTART_BOUND_MS} ms` : 'exited';
          throw new Error(`the server ${what} after one of its PostgreSQL sessions was killed`);
        }
        result.restarts++;
        readyAt = performance.now();
        say(`${tag}: kill ${i + 1}/${plan.length} at ${((at - t0) / 1000).toFixed(1)} s (backend: one of ${backends.length} PostgreSQL sessions; the server ran on): ready again in ${recovered} ms`);
        continue;
      }
      await coffer.kill();
      if (pgPid !== undefined && alive(pgPid)) {
        if (mode === 'server+postmaster') await killPostgres(pgPid, 'postmaster', dataDir);
        if (mode.startsWith('server+database')) await killPostgres(pgPid, 'group', dataDir);
      }
      const inFlight = requests.filter((r) => !r.acked && !r.rejected && !r.unknown).length + payments.filter((r) => !r.acked && !r.rejected).length;
      // Deliveries the killed process had sent are in by now; later ones belong to the next process.
      await sleep(200);
      receiver.generation++;
      let during = '';
      if (mode.endsWith('+startup')) {
        const delay = Math.round(100 + random() * 1400);
        const starting = coffer.start(RESTART_BOUND_MS).then(() => true, () => false);
        await sleep(delay);
        const wasReady = coffer.running !== undefined;
        await coffer.kill();
        await starting;
        startupKills++;
        during = `, then killed again ${delay} ms into its start (${wasReady ? 'it was ready' : 'not yet ready'})`;
        await sleep(200);
        receiver.generation++;
      }
      let started;
      for (let attempt = 1; !started && attempt <= 3; attempt++) {
        try {
          started = await coffer.start(RESTART_BOUND_MS);
        } catch (err) {
          problems.push(`restart ${i + 1} (after kill: ${mode}), attempt ${attempt}, failed: ${(err as Error).message}`);
        }
      }
      if (!started) throw new Error(`the server could not be restarted after kill ${i + 1} (${mode})`);
      result.restarts++;
      readyAt = performance.now();
      readyMax = Math.max(readyMax, started.readyMs);
      say(`${tag}: kill ${i + 1}/${plan.length} at ${((at - t0) / 1000).toFixed(1)} s (${mode}, ${inFlight} requests in flight${during}): ready again in ${started.readyMs} ms`);
    }
    await load;

    const rejected = requests.filter((r) => r.rejected);
    for (const r of rejected.slice(0, 10)) problems.push(`seq ${r.seq} rejected: ${r.rejected}`);
    if (rejected.length > 10) problems.push(`… and ${rejected.length - 10} more requests rejected`);
    const unacked = requests.filter((r) => !r.acked && !r.rejected && !r.unknown);
    if (unacked.length) problems.push(`${unacked.length} requests still unacknowledged ${ACK_WINDOW_MS / 1000} s after the load stopped (e.g. seq ${unacked[0].seq}, ${unacked[0].attempts} sends)`);
    const payRejected = payments.filter((r) => r.rejected);
    for (const r of payRejected.slice(0, 10)) problems.push(`payment seq ${r.seq} (${r.kind}) rejected: ${r.rejected}`);
    if (payRejected.length > 10) problems.push(`… and ${payRejected.length - 10} more payment requests rejected`);
    const payUnacked = payments.filter((r) => !r.acked && !r.rejected);
    if (payUnacked.length) problems.push(`${payUnacked.length} payment requests still unacknowledged ${ACK_WINDOW_MS / 1000} s after the load stopped (e.g. seq ${payUnacked[0].seq}, ${payUnacked[0].attempts} sends)`);
    const acked = requests.filter((r) => r.acked);
    const payAcked = payments.filter((r) => r.acked);
    result.acknowledged = acked.length + payAcked.length;
    say(
      `${tag}: ${acked.length} requests acknowledged in ${((performance.now() - t0) / 1000).toFixed(1)} s (${stats.replayedAcks} by a replay); ` +
        `${stats.sent} sends, ${stats.networkErrors} connection errors, ${stats.conflicts} × 409, ${stats.serverErrors} × 5xx; ` +
        `${acked.filter((r) => r.key === null).length} acknowledged and ${requests.filter((r) => r.unknown).length} unknown without a key`,
    );
    say(
      `${tag}: payments: ${payAcked.filter((r) => r.kind === 'transaction').length} transactions and ${payAcked.filter((r) => r.kind === 'refund').length} refunds acknowledged ` +
        `(${payStats.replayedAcks} by a replay, ${payAcked.filter((r) => r.kind === 'transaction' && r.reply.status === 'processing').length} answered processing); ` +
        `${payStats.sent} sends, ${payStats.networkErrors} connection errors, ${payStats.conflicts} × 409, ${payStats.serverErrors} × 5xx; ` +
        `${stripe.requests.length} requests to Stripe`,
    );

    // Replayed: every request that needed more than one send (those a kill caught), and a sample of the rest.
    // Requests without a key have nothing to replay.
    const keyed = acked.filter((r) => r.key !== null);
    const others = keyed.filter((r) => r.attempts === 1);
    const sample = [...keyed.filter((r) => r.attempts > 1), ...others.filter(() => random() < REPLAY_SAMPLE / Math.max(others.length, 1))];
    const badReplays = await checkReplays(coffer.url, apiKey, sample, problems);
    const lostTokens = await checkAcknowledged(coffer.url, apiKey, acked, problems);
    sql = new pg.Client({ connectionString: databaseUrl ?? coffer.embeddedUrl() });
    await sql.connect();
    const store = await checkStore(sql, tenantId, requests, problems);
    const jobs = await checkJobs(sql, tenantId, receiver, DRAIN_BOUND_MS, problems);
    const pay = await checkPayments(sql, tenantId, payments, stripe, SETTLE_BOUND_MS, problems);
    await sql.end();
    sql = undefined;
    say(
      `${tag}: tokens=${store.tokens} lost_tokens=${lostTokens} replays_checked=${sample.length} replay_mismatches=${badReplays} ` +
        `duplicate_keys=${store.duplicates} partial=${store.partial}; ` +
        `events=${jobs.events} delivered=${jobs.delivered} lost_jobs=${jobs.lost} redelivered=${jobs.redelivered} retried=${jobs.retried} ran_twice=${jobs.ranTwice}`,
    );
    say(
      `${tag}: transactions=${pay.transactions} refunds=${pay.refunds} lost_payments=${pay.lost} stuck=${pay.stuck} ` +
        `double_charges=${pay.doubleCharges} duplicate_transactions=${pay.duplicates} refunded_mismatches=${pay.mismatched} ` +
        `calls_repeated_with_their_key=${pay.repeated}`,
    );
    result.lost = lostTokens + jobs.lost + pay.lost;
    result.duplicates = store.duplicates + pay.duplicates;
    result.stuck = pay.stuck;
    result.double_charges = pay.doubleCharges;
    if (pay.mismatched) problems.push(`${pay.mismatched} transactions whose refunded or captured amount does not add up`);

    const pgPid = coffer.postmasterPid();
    const code = await coffer.stop(30_000);
    if (code !== 0) problems.push(`the final SIGTERM ended the server with ${code === null ? 'a timeout' : `exit code ${code}`}`);
    if (!databaseUrl && pgPid !== undefined) {
      for (let i = 0; i < 100 && alive(pgPid); i++) await sleep(50);
      if (alive(pgPid)) problems.push(`the embedded PostgreSQL (pid ${pgPid}) still runs after the server stopped`);
    }
    say(
      `${tag}: ${result.restarts} restarts (and ${startupKills} more killed while starting), slowest ready in ${readyMax} ms; ` +
        `server error log lines: ${summarise(coffer.errors)}`,
    );
  } catch (err) {
    problems.push((err as Error).message);
  } finally {
    await cleanup();
    emergency = undefined;
    result.acknowledged = requests.filter((r) => r.acked).length + payments.filter((r) => r.acked).length;
  }
  for (const d of coffer.died) problems.push(`the server (pid ${d.pid}) exited on its own with code ${d.code}:\n${d.stderr}`);
  for (const p of problems) process.stderr.write(`${tag}: FAIL ${p}\n`);
  result.failed = problems.length > 0;
  return result;
}

/** Polls /health/ready (the database answers) until 200; the milliseconds it took, or undefined after `boundMs` or once the server is gone. */
async function untilReady(coffer: Coffer, boundMs: number): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < boundMs && coffer.running) {
    const res = await fetch(`${coffer.url}/health/ready`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    await res?.text();
    if (res?.status === 200) return Math.round(performance.now() - t0);
    await sleep(50);
  }
  return undefined;
}

function summarise(counts: Map<string, number>): string {
  if (counts.size === 0) return 'none';
  return [...counts].map(([msg, n]) => `${n} × "${msg}"`).join(', ');
}

/** A scratch database on the external server when the URL's user may create one; otherwise the URL as given. */
async function scratchDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `coffer_crash_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } catch (err) {
    say(`crash[external]: cannot create a scratch database (${(err as Error).message}); using CRASH_DATABASE_URL as given`);
    return { url: adminUrl, async drop() {} };
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

const external = process.env.CRASH_DATABASE_URL || undefined;
const results: Result[] = [];
const total = (k: 'acknowledged' | 'lost' | 'duplicates' | 'restarts' | 'stuck' | 'double_charges') => results.reduce((n, r) => n + r[k], 0);
const finalLine = () =>
  `crash: acknowledged=${total('acknowledged')} lost=${total('lost')} duplicates=${total('duplicates')} restarts=${total('restarts')} ` +
  `stuck=${total('stuck')} double_charges=${total('double_charges')}`;

// Whatever hangs, the run ends: the budget is every phase at its bound.
const budgetMs = (external ? 2 : 1) * (2 * (SECONDS * 1000 + ACK_WINDOW_MS + DRAIN_BOUND_MS + SETTLE_BOUND_MS) + KILLS * 3 * RESTART_BOUND_MS);
setTimeout(() => {
  process.stderr.write(`crash: FAIL the run did not finish within ${Math.round(budgetMs / 1000)} s\n`);
  void (emergency?.() ?? Promise.resolve()).finally(() => {
    say(finalLine());
    process.exit(1);
  });
}, budgetMs).unref();

results.push(await crashRun('embedded', undefined));
if (external) {
  try {
    const db = await scratchDatabase(external);
    try {
      results.push(await crashRun('external', db.url));
    } finally {
      await db.drop();
    }
  } catch (err) {
    process.stderr.write(`crash[external]: FAIL ${(err as Error).message}\n`);
    results.push({ acknowledged: 0, lost: 0, duplicates: 0, restarts: 0, stuck: 0, double_charges: 0, failed: true });
  }
}

say(finalLine());
process.exit(total('lost') === 0 && total('duplicates') === 0 && total('stuck') === 0 && total('double_charges') === 0 && results.every((r) => !r.failed) ? 0 : 1);
