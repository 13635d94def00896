/**
 * `npm run bench [-- scenario ...]`: starts Coffer on a fresh embedded PostgreSQL and a
 * bare Fastify baseline, each in its own child process, drives both with autocannon from
 * this process, and reports every scenario against its baseline measured in the same run.
 * Then it restarts Coffer with metrics on for the sandbox overhead (read from its /metrics),
 * and last as `serve --workers 2` on the same database for the scaling row;
 * the service's memory is sampled throughout (bench/rss.ts).
 * Missing a target is reported, not an error (exit 0); a run with any non-2xx response
 * is an error (exit 1), because it measured something else. See docs/benchmarks.md.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BENCH_TABLE, createBenchTable, dropBenchTable, embeddedConnection, insertRow, opsLoad, preloadRows, selectRandomRow } from './db.ts';
import { databaseEnv, tokensEnv } from './minimal-env.ts';
import { BenchError, freePort, load, probe, startCommand, startServer, table, waitReady, type Req, type Result, type Row, type Server, type ValueRow } from './lib.ts';
import { pairedLatency, type Latencies } from './overhead.ts';
import { RssSampler, type ServerPeak } from './rss.ts';
import { cpuSeconds, perRequest, statSeconds, type CpuPerRequest } from './cpu.ts';
import { runStats, scrapeRunBuckets } from './sandbox-runs.ts';
import { cpuTimes, percent, STEAL_WARNING, stealShare } from './steal.ts';
import { waitWorkersServing } from './workers.ts';
import { googlePay, googlePayEnv, googlePayRequests } from './google-pay.ts';
import { threeds, threedsRequests } from './threeds.ts';
import { paymentRequests, payments } from './transactions.ts';
import { Client } from 'undici';

/** What prepare/requests get: the running Coffer, its management key, and a way to set data up through the API. */
type Context = {
  key: string;
  /** A call to Coffer with the management key (or `key`); throws on non-2xx, returns the parsed JSON body. */
  call(method: string, path: string, json?: unknown, key?: string): Promise<any>;
  /** The baseline child's URL: its POST /echo is the proxy scenarios' destination. */
  destination: string;
  /** Coffer's METRICS_TOKEN, for reading its /metrics. */
  metricsToken: string;
};

type Target = {
  /**
   * Which child serves the requests (default Coffer): the baseline (bare Fastify, the echo), or
   * one of the minimal programs, started the first time a run needs them (see `minimal`).
   */
  server?: 'coffer' | 'baseline' | MinimalName;
  /** Runs once before the warm-up; what it returns is passed to `requests`. */
  prepare?: (ctx: Context) => Promise<Record<string, any>>;
  /** The request, or requests cycled through, that the run sends. */
  requests: (ctx: Context, prepared: Record<string, any>) => Req | Req[];
};

/**
 * A baseline run in this process straight against Coffer's embedded PostgreSQL: a pool of
 * as many connections as the scenario has, and as many workers each looping `op`. The
 * table bench_raw exists before `prepare` runs and is dropped at the end of the run.
 */
type DbTarget = {
  /** Runs once before the warm-up, on the same pool; what it returns is passed to `op`. */
  prepare?: (pool: pg.Pool) => Promise<Record<string, any>>;
  op: (pool: pg.Pool, prepared: Record<string, any>) => Promise<unknown>;
};

type Scenario = Target & {
  name: string;
  /** Key of `baselines`; measured in this run with the scenario's connection count. */
  baseline: string;
  /**
   * Key of `baselines`: the scenario's former baseline, measured once more right after it and
   * printed as information (no target), so figures stay comparable with earlier runs.
   */
  formerBaseline?: string;
  /**
   * Key of `baselines`: the least program doing the scenario's whole job (a minimal program),
   * measured once more right after the bracket and printed as information (no target): how
   * much of what such a program reaches Coffer reaches.
   */
  floor?: string;
  /** The scenario passes when its req/s is at least this share of the baseline's… */
  target: number;
  /** …and, when set, its p99 latency is at most this. */
  p99_target_ms?: number;
  connections: number;
};

/** The minimal programs a scenario's baseline may be served by (docs/benchmarks.md, "Minimal programs"). */
type MinimalName = 'proxy.minimal' | 'proxy.minimal_token' | 'react.minimal' | 'react.minimal_token';

const baselines: Record<string, Target | { db: DbTarget }> = {
  'fastify.bare': { server: 'baseline', requests: () => ({ path: '/bare' }) },
  // One autocommitted single-row INSERT into bench_raw (~200 random bytes of payload, like a card's ciphertext).
  'pg.insert': { db: { op: (pool) => insertRow(pool) } },
  // A primary-key SELECT of a random one of 10,000 preloaded bench_raw rows.
  'pg.select': {
    db: { prepare: async (pool) => ({ ids: await preloadRows(pool, 10_000) }), op: (pool, { ids }) => selectRandomRow(pool, ids) },
  },
  // The `detokenize` scenario's requests, as the baseline of react.one_token (arrow, since `vault` is defined below).
  detokenize: { prepare: (ctx) => vault(ctx), requests: (ctx, prepared) => detokenizeRequests(ctx, prepared) },
  // The proxy scenarios' destination called directly: the same POST body, echoed.
  'echo.direct': { server: 'baseline', requests: () => ECHO_DIRECT },
  // The same body and headers through the least reverse proxy (bench/minimal-proxy.ts) to the same echo.
  'proxy.minimal': {
    server: 'proxy.minimal',
    prepare: (ctx) => proxies(ctx),
    requests: (_, { key, proxyKey }) => ({ ...ECHO_DIRECT, headers: { 'svc-api-key': key, 'svc-proxy-key': proxyKey } }),
  },
  // proxy.one_token's requests through the least proxy that puts the token's data in the body: a SELECT shared by
  // the calls of a turn of the loop, AES-GCM, and an audit row per call committed by a shared INSERT before it
  // forwards (bench/minimal-token-work.ts), as the floor of proxy.one_token.
  'proxy.minimal_token': {
    server: 'proxy.minimal_token',
    prepare: (ctx) => proxies(ctx),
    // The echo's own path, as proxy.minimal's: the least proxy has no /proxy route.
    requests: (_, { key, proxyKey, ids }) => oneTokenRequests(key, proxyKey, ids).map((r) => ({ ...r, path: ECHO_DIRECT.path })),
  },
  // react.trivial's code in a sandbox process's warm isolate plus one committed audit row (bench/minimal-react.ts).
  'react.minimal': {
    server: 'react.minimal',
    prepare: (ctx) => vault(ctx),
    requests: (_, { key }) => minimalReactRequest(key, {}),
  },
  // react.one_token's code and args through react.minimal with the token's data put in first, as proxy.minimal_token
  // puts it in (bench/minimal-token-work.ts), as the floor of react.one_token.
  'react.minimal_token': {
    server: 'react.minimal_token',
    prepare: (ctx) => vault(ctx),
    requests: (_, { key, ids }) => ids.map((id: string) => minimalReactRequest(key, { card: `{{ ${id} }}` })),
  },
  // The `tokens.create` scenario's requests, as the baseline of googlepay.tokenize (arrow: `vault` is defined below).
  'tokens.create': { prepare: (ctx) => vault(ctx), requests: (_, { key }) => createTokenRequest(key) },
  // The `tokens.get` scenario's requests, as the baseline of threeds.frictionless (arrow: `vault` is defined below).
  'tokens.get': { prepare: (ctx) => vault(ctx), requests: (_, { key, ids }) => getTokenRequests(key, ids) },
};

// The token scenarios: a private application allowed to create, read (reveal) and use every token.
const CARD = { type: 'card', data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' } };
const VAULT_APP = {
  name: 'bench',
  type: 'private',
  rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read', 'token:use'] }],
};
const TOKENS = 100;
let vaultSetup: Promise<{ key: string; ids: string[] }> | undefined;
/** Creates the application and TOKENS card tokens once per run; every token scenario shares them. */
const vault = ({ call }: Context) =>
  (vaultSetup ??= (async () => {
    const { key } = await call('POST', '/applications', VAULT_APP);
    const ids: string[] = [];
    for (let i = 0; i < TOKENS; i += 10) {
      const batch = await Promise.all(Array.from({ length: Math.min(10, TOKENS - i) }, () => call('POST', '/tokens', CARD, key)));
      ids.push(...batch.map((t: { id: string }) => t.id));
    }
    return { key, ids };
  })());

// The reactor scenarios: two reactors without an application (bt is null), created with the management key and
// invoked with the token scenarios' private key, whose rule grants token:use.
const REACTORS = {
  trivial: 'module.exports = async () => ({ raw: { ok: true } })',
  oneToken: 'module.exports = async (req) => ({ raw: { last4: req.args.card.number.slice(-4) } })',
};
let reactorSetup: Promise<Record<string, any>> | undefined;
/** The vault's key and token ids plus the reactors' ids, once per run. */
const reactors = (ctx: Context): Promise<Record<string, any>> =>
  (reactorSetup ??= (async () => {
    const ids: Record<string, string> = {};
    for (const [name, code] of Object.entries(REACTORS)) ids[name] = (await ctx.call('POST', '/reactors', { name: `bench-${name}`, code, configuration: {} })).id;
    return { ...(await vault(ctx)), ...ids };
  })());
const reactRequest = (key: string, reactor: string, args: unknown): Req => ({
  method: 'POST',
  path: `/reactors/${reactor}/react`,
  headers: { 'svc-api-key': key },
  json: { args },
});
/** The same call to a minimal react program (bench/minimal-react.ts): one route, no reactors. */
const minimalReactRequest = (key: string, args: unknown): Req => ({ method: 'POST', path: '/react', headers: { 'svc-api-key': key }, json: { args } });

// The proxy scenarios: one proxy (require_auth, no transforms) to the baseline's POST /echo, invoked with the
// token scenarios' private key (token:use). The body is a small payment request, as a processor would get it.
const PAYMENT = { amount: 1000, currency: 'USD', reference: 'order-1234', card: { number: '4242424242424242', expiration: '12/30' } };
const ECHO_DIRECT: Req = { method: 'POST', path: '/echo', json: PAYMENT };
let proxySetup: Promise<Record<string, any>> | undefined;
/** The vault's key and token ids plus the proxy's key, once per run. */
const proxies = (ctx: Context): Promise<Record<string, any>> =>
  (proxySetup ??= (async () => {
    const proxy = await ctx.call('POST', '/proxies', { name: 'bench-echo', destination_url: `${ctx.destination}/echo` });
    // The same, through a request transform that hands the body and headers on unchanged: one sandbox run per call.
    const transformed = await ctx.call('POST', '/proxies', {
      name: 'bench-echo-transformed',
      destination_url: `${ctx.destination}/echo`,
      request_transform: { code: 'module.exports = async (req) => ({ body: req.args.body, headers: req.args.headers });' },
    });
    return { ...(await vault(ctx)), proxyKey: proxy.key, transformedKey: transformed.key };
  })());
const proxyRequest = (key: string, proxyKey: string, json: unknown): Req => ({
  method: 'POST',
  path: '/proxy',
  headers: { 'svc-api-key': key, 'svc-proxy-key': proxyKey },
  json,
});

const scenarios: Scenario[] = [
  {
    // The authentication path: key → principal (cached), permission check, the caller's application.
    name: 'auth',
    baseline: 'fastify.bare',
    target: 0.5,
    connections: 50,
    requests: ({ key }) => ({ path: '/applications/key', headers: { 'svc-api-key': key } }),
  },
  {
    // Validate, fingerprint (HMAC), encrypt, then INSERT token + audit event + domain event in one transaction.
    name: 'tokens.create',
    baseline: 'pg.insert',
    target: 0.6,
    p99_target_ms: 25,
    connections: 64,
    prepare: vault,
    requests: (_, { key }) => createTokenRequest(key),
  },
  {
    // SELECT by primary key, decrypt, reveal, and an audit event for the reveal.
    name: 'tokens.get',
    baseline: 'pg.select',
    target: 0.5,
    p99_target_ms: 25,
    connections: 64,
    prepare: vault,
    requests: (_, { key, ids }) => getTokenRequests(key, ids),
  },
  {
    // Check the ECv2 token's shape, verify the intermediate key's signature under the root key and the
    // message's under the intermediate key, ECDH + HKDF, check the tag, AES-CTR decrypt, then store a
    // token intent (encrypted) with its audit entry and event: the tokens.create of a wallet.
    name: 'googlepay.tokenize',
    baseline: 'tokens.create',
    target: 0.5,
    connections: 64,
    prepare: googlePay,
    requests: googlePayRequests,
  },
  {
    // Two requests an iteration (bench/threeds.ts): a 3DS session created for a card token, then authenticated
    // frictionlessly with the simulator. Against tokens.get of the same run: each request reads and decrypts a token too.
    name: 'threeds.frictionless',
    baseline: 'tokens.get',
    target: 0.4,
    connections: 64,
    prepare: threeds,
    requests: threedsRequests,
  },
  {
    // A payment authorized and captured in one call on the test processor (bench/transactions.ts): one
    // detokenization, the transaction written before the call and its outcome after it.
    name: 'transactions.create',
    baseline: 'detokenize',
    target: 0.5,
    connections: 64,
    prepare: payments,
    requests: paymentRequests,
  },
  {
    // Parse the expression, load and decrypt the token, audit the use, render $.number into the body.
    name: 'detokenize',
    baseline: 'pg.select',
    target: 0.5,
    p99_target_ms: 25,
    connections: 64,
    prepare: vault,
    requests: detokenizeRequests,
  },
  {
    // Load the reactor, audit the call, run code that returns a constant in a warm isolate, two reactor.* events.
    name: 'react.trivial',
    baseline: 'react.minimal',
    formerBaseline: 'fastify.bare',
    target: 0.7,
    connections: 50,
    prepare: reactors,
    requests: (_, { key, trivial }) => reactRequest(key, trivial, {}),
  },
  {
    // react.trivial plus one token detokenized (token:use) into args.card; the code returns its last 4 digits.
    name: 'react.one_token',
    baseline: 'detokenize',
    floor: 'react.minimal_token',
    target: 0.5,
    connections: 64,
    prepare: reactors,
    requests: (_, { key, ids, oneToken }) => ids.map((id: string) => reactRequest(key, oneToken, { card: `{{ ${id} }}` })),
  },
  {
    // Find the proxy by its key (cached), check the caller's key and token:use, scan the body for '{{' (none),
    // forward it to the echo over a pooled keep-alive connection, stream the answer back.
    name: 'proxy.passthrough',
    baseline: 'proxy.minimal',
    formerBaseline: 'echo.direct',
    target: 0.7,
    connections: 50,
    prepare: proxies,
    requests: (_, { key, proxyKey }) => proxyRequest(key, proxyKey, PAYMENT),
  },
  {
    // proxy.passthrough plus one token detokenized (token:use, audited) into the JSON body, cycling over the tokens.
    name: 'proxy.one_token',
    baseline: 'proxy.minimal',
    formerBaseline: 'echo.direct',
    floor: 'proxy.minimal_token',
    target: 0.5,
    connections: 50,
    prepare: proxies,
    requests: (_, { key, proxyKey, ids }) => oneTokenRequests(key, proxyKey, ids),
  },
];

/** proxy.one_token's requests: PAYMENT with its card's number and expiration as expressions of each token in turn. */
function oneTokenRequests(key: string, proxyKey: string, ids: string[]): Req[] {
  return ids.map((id) => proxyRequest(key, proxyKey, { ...PAYMENT, card: { number: `{{ ${id} | json: '$.number' }}`, expiration: `{{ ${id} | card_exp: 'MM/YY' }}` } }));
}

function getTokenRequests(key: string, ids: string[]): Req[] {
  return ids.map((id) => ({ path: `/tokens/${id}`, headers: { 'svc-api-key': key } }));
}

function createTokenRequest(key: string): Req {
  return { method: 'POST', path: '/tokens', headers: { 'svc-api-key': key }, json: CARD };
}

function detokenizeRequests(_: Context, { key, ids }: Record<string, any>): Req[] {
  return ids.map((id: string) => ({ method: 'POST', path: '/detokenize', headers: { 'svc-api-key': key }, json: { number: `{{ ${id} | json: '$.number' }}` } }));
}

/**
 * Not a throughput scenario: the warm sandbox's cost per call. react.trivial's request and
 * `auth`'s (GET /applications/key with the management key: the private key lacks
 * application:read; both keys' principals are cached alike) are sent alternately on one
 * connection (bench/overhead.ts), and the sandbox's own time of each react call is read
 * from Coffer's /metrics (bench/sandbox-runs.ts): the target is on its p50. The difference
 * of the two requests' p50s is reported too, as an upper bound: it adds the react route's
 * other work, the commit of its audit entry and events first. Runs with every scenario, or
 * when named.
 */
const OVERHEAD = { name: 'sandbox.overhead_p50', target_ms: 1 };

/** The results.json row of OVERHEAD (docs/benchmarks.md); latencies in ms, of react.trivial and, as baseline_*, of `auth`. */
type OverheadRow = {
  scenario: string;
  overhead_ms: number;
  /** sandbox.overhead_p50 only: the sandbox's own time per run, from Coffer's metrics. */
  sandbox?: { run_p50_ms: number | undefined; runs: number; runs_within_target: number };
  target_ms: number;
  connections: 1;
  p50_ms: number;
  p99_ms: number;
  baseline: string;
  baseline_p50_ms: number;
  baseline_p99_ms: number;
  samples: number;
};

/** The row of a one-connection pair: `a`'s p50 minus the baseline `b`'s. */
function overheadRow(spec: { name: string; target_ms: number }, baseline: string, a: Latencies, b: Latencies): OverheadRow {
  return {
    scenario: spec.name,
    overhead_ms: Math.round((a.p50 - b.p50) * 1000) / 1000,
    target_ms: spec.target_ms,
    connections: 1,
    p50_ms: a.p50,
    p99_ms: a.p99,
    baseline,
    baseline_p50_ms: b.p50,
    baseline_p99_ms: b.p99,
    samples: a.samples,
  };
}

async function measureOverhead(ctx: Context, url: string, duration: number): Promise<OverheadRow> {
  const { key, trivial } = await reactors(ctx);
  const react = reactRequest(key, trivial, {});
  const auth: Req = { path: '/applications/key', headers: { 'svc-api-key': ctx.key } };
  await probe(OVERHEAD.name, url, [react, auth]);
  process.stdout.write(`${OVERHEAD.name}: react.trivial and GET /applications/key alternately on 1 connection, warm-up ${WARMUP_SECONDS} s, then ${duration} s\n`);
  await pairedLatency(`${OVERHEAD.name} (warm-up)`, url, react, auth, WARMUP_SECONDS);
  const before = await scrapeRunBuckets(url, ctx.metricsToken);
  const { a, b } = await pairedLatency(OVERHEAD.name, url, react, auth, duration);
  const runs = runStats(before, await scrapeRunBuckets(url, ctx.metricsToken), OVERHEAD.target_ms);
  // Every react call of the run is one sandbox run; fewer means the figure is of something else.
  if (runs.runs < a.samples) throw new BenchError(`${OVERHEAD.name}: ${a.samples} react calls but ${runs.runs} sandbox runs in Coffer's metrics`);
  return {
    ...overheadRow(OVERHEAD, 'auth', a, b),
    sandbox: { run_p50_ms: runs.p50Ms, runs: runs.runs, runs_within_target: Math.round(runs.withinLimit * 1000) / 1000 },
  };
}

/**
 * The scaling row: `of`'s request against `coffer serve --workers N` on the same database
 * (the single-process Coffer is stopped first and the cluster started on its DATA_DIR),
 * compared with `of`'s single-process figure from earlier in the same run. Runs last, with
 * the whole bench or when named (which also runs `of`). Why the target is 0.9 (no loss, not a
 * speed-up, on 2 cores already saturated by Coffer, PostgreSQL and autocannon): docs/benchmarks.md.
 */
const SCALING = { name: 'tokens.create.2workers', of: 'tokens.create', workers: 2, target: 0.9 };
/** A worker with less than this share of the workers' CPU time during the run means the port was not shared: an error. */
const MIN_WORKER_SHARE = 0.25;

/** Not a throughput row: the service's peak resident memory over the whole run (bench/rss.ts). Always measured. */
const MEMORY = { name: 'memory.peak_rss', target_mb: 400, interval_ms: 200 };
const MB = 1024 * 1024;

/** The results.json row of MEMORY (docs/benchmarks.md). */
type MemoryRow = {
  scenario: string;
  peak_rss_mb: number;
  target_mb: number;
  server: string;
  samples: number;
  interval_ms: number;
  by_server: {
    server: string;
    peak_rss_mb: number;
    sampled_peak_mb: number;
    during: string;
    process_rss_mb: number[];
    process_anon_mb: number[];
    process_hwm_mb: number;
    samples: number;
    by_phase: Record<string, number>;
  }[];
};

function memoryRow(peaks: ServerPeak[]): MemoryRow {
  const mb = (bytes: number) => Math.round((bytes / MB) * 10) / 10;
  const by_server = peaks.map((p) => ({
    server: p.server,
    // Both are lower bounds of the true peak (one a real total at one instant, the other one process's part of one), so the higher is the better.
    peak_rss_mb: mb(Math.max(p.sampledBytes, p.processHwmBytes)),
    sampled_peak_mb: mb(p.sampledBytes),
    during: p.during,
    process_rss_mb: p.processes.map((x) => mb(x.rss)),
    process_anon_mb: p.processes.map((x) => mb(x.anon)),
    process_hwm_mb: mb(p.processHwmBytes),
    samples: p.samples,
    by_phase: Object.fromEntries(p.phases.map((x) => [x.during, mb(x.bytes)])),
  }));
  const top = by_server.reduce((a, b) => (b.peak_rss_mb > a.peak_rss_mb ? b : a), by_server[0]);
  if (!top) throw new BenchError(`${MEMORY.name}: no sample of Coffer's memory was taken`);
  return {
    scenario: MEMORY.name,
    peak_rss_mb: top.peak_rss_mb,
    target_mb: MEMORY.target_mb,
    server: top.server,
    samples: by_server.reduce((n, b) => n + b.samples, 0),
    interval_ms: MEMORY.interval_ms,
    by_server,
  };
}

/**
 * Long enough for Coffer to reach its steady state under load: V8's optimising compilers
 * share the 2 cores with the event loop, PostgreSQL and autocannon, and Coffer's CPU per
 * created token took ~5 s of load to settle (1.3–2 times its steady cost before;
 * docs/benchmarks.md, "Warm-up").
 */
const WARMUP_SECONDS = 6;
const root = path.resolve(import.meta.dirname, '..');
const resultsPath = path.join(import.meta.dirname, 'results.json');

function durationSeconds(): number {
  const raw = process.env.BENCH_DURATION ?? '10';
  // Capped so the 42 runs (12 scenario runs, 22 baselines bracketing 11 scenarios, 3 former baselines, 2 floors, the
  // three one-connection pairs) plus start-ups stay under 20 minutes (each run is the warm-up plus this: ~18 minutes at 20 s).
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 20) throw new BenchError(`BENCH_DURATION must be whole seconds from 1 to 20 (got "${raw}")`);
  return Number(raw);
}

/**
 * Not a throughput scenario either: what a proxy adds to one call, as the p50 of
 * proxy.passthrough's request minus the p50 of the same body sent straight to the echo, at
 * one connection each, sent alternately. Runs with every scenario, or when named.
 */
const PROXY_ADDED = { name: 'proxy.added_p50', target_ms: 1.5 };

async function measureProxyAdded(ctx: Context, url: string, duration: number): Promise<OverheadRow> {
  const { key, proxyKey } = await proxies(ctx);
  const proxied = { url, req: proxyRequest(key, proxyKey, PAYMENT) };
  const direct = { url: ctx.destination, req: ECHO_DIRECT };
  await probe(PROXY_ADDED.name, url, [proxied.req]);
  process.stdout.write(`${PROXY_ADDED.name}: POST /proxy and the echo directly, alternately on 1 connection each, warm-up ${WARMUP_SECONDS} s, then ${duration} s\n`);
  await pairedAcross(`${PROXY_ADDED.name} (warm-up)`, proxied, direct, WARMUP_SECONDS);
  const { a, b } = await pairedAcross(PROXY_ADDED.name, proxied, direct, duration);
  return overheadRow(PROXY_ADDED, 'echo.direct', a, b);
}

/**
 * Not a throughput scenario: what a request transform adds to a proxy call (a sandbox run in
 * a sandbox process, the body handed over as JSON and back), as the p50 of a call through a
 * proxy whose transform returns the body and headers unchanged minus proxy.passthrough's p50,
 * sent alternately on one connection. Runs with every scenario, or when named.
 */
const PROXY_TRANSFORM = { name: 'proxy.transform_added_p50', target_ms: 1.5 };

async function measureProxyTransform(ctx: Context, url: string, duration: number): Promise<OverheadRow> {
  const { key, proxyKey, transformedKey } = await proxies(ctx);
  const transformed = proxyRequest(key, transformedKey, PAYMENT);
  const plain = proxyRequest(key, proxyKey, PAYMENT);
  await probe(PROXY_TRANSFORM.name, url, [transformed, plain]);
  process.stdout.write(`${PROXY_TRANSFORM.name}: POST /proxy with and without a request transform, alternately on 1 connection, warm-up ${WARMUP_SECONDS} s, then ${duration} s\n`);
  await pairedLatency(`${PROXY_TRANSFORM.name} (warm-up)`, url, transformed, plain, WARMUP_SECONDS);
  const { a, b } = await pairedLatency(PROXY_TRANSFORM.name, url, transformed, plain, duration);
  return overheadRow(PROXY_TRANSFORM, 'proxy.passthrough', a, b);
}

/** pairedLatency for two origins: `a` and `b` alternately, each on a keep-alive connection of its own, timed here. */
async function pairedAcross(label: string, a: { url: string; req: Req }, b: { url: string; req: Req }, seconds: number): Promise<{ a: Latencies; b: Latencies }> {
  const clients = [new Client(a.url, { pipelining: 1 }), new Client(b.url, { pipelining: 1 })];
  const times: number[][] = [[], []];
  const send = async (i: number) => {
    const req = i === 0 ? a.req : b.req;
    const headers: Record<string, string> = { ...req.headers, ...(req.json === undefined ? {} : { 'content-type': 'application/json' }) };
    const t0 = process.hrtime.bigint();
    const res = await clients[i].request({ method: (req.method ?? 'GET') as 'GET', path: req.path, headers, body: req.json === undefined ? undefined : JSON.stringify(req.json) });
    const text = await res.body.text();
    times[i].push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (res.statusCode < 200 || res.statusCode > 299) throw new BenchError(`${label}: ${req.path} answered ${res.statusCode}: ${text.slice(0, 500)}`);
  };
  try {
    const deadline = process.hrtime.bigint() + BigInt(seconds) * 1_000_000_000n;
    // The order swaps every pair, so neither always follows the other.
    for (let i = 0; process.hrtime.bigint() < deadline; i++) for (const which of i % 2 === 0 ? [0, 1] : [1, 0]) await send(which);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  const stats = (xs: number[]): Latencies => {
    xs.sort((x, y) => x - y);
    const at = (q: number) => Math.round(xs[Math.min(xs.length - 1, Math.ceil((q / 100) * xs.length) - 1)] * 1000) / 1000;
    return { p50: at(50), p99: at(99), samples: xs.length };
  };
  return { a: stats(times[0]), b: stats(times[1]) };
}

type RowSteal = { run: number | undefined; baseline: (number | undefined)[] };

/** The line under the table: each row's steal, and a warning naming the rows that lost more than STEAL_WARNING. */
function stealReport(rows: [string, RowSteal | undefined][]): string {
  const known = rows.filter((r): r is [string, RowSteal] => r[1]?.run !== undefined);
  if (known.length === 0) return '';
  const parts = known.map(([name, s]) => `${name} ${percent(s.run)} (${s.baseline.map(percent).join(', ')})`);
  const noisy = known.filter(([, s]) => [s.run, ...s.baseline].some((x) => x !== undefined && x > STEAL_WARNING)).map(([name]) => name);
  return (
    `CPU steal, the share of the 2 cores' time the host took away during each measured run (the row's own; its baseline's before, after): ${parts.join(', ')}\n` +
    (noisy.length ? `warning: ${noisy.join(', ')} lost more than ${percent(STEAL_WARNING)} of CPU time to the host in some run; their ratios measure the host too: run them again\n` : '')
  );
}

/** Lines under the table: each run's CPU time per request, by process (bench/cpu.ts). */
function cpuReport(rows: [string, CpuPerRequest | undefined][], of = 'each scenario'): string {
  const known = rows.filter((r): r is [string, CpuPerRequest] => r[1] !== undefined);
  if (known.length === 0) return '';
  const width = Math.max(...known.map(([name]) => name.length));
  return (
    `CPU time per request in µs, ${of}: Coffer (its event-loop threads; its sandbox processes), PostgreSQL, bench (autocannon), baseline child, minimal program (with its sandbox process); total\n` +
    known.map(([name, c]) => `  ${name.padEnd(width)}  ${c.coffer} (${c.main}; ${c.sandbox}), ${c.postgres}, ${c.bench}, ${c.baseline}, ${c.minimal}; ${c.total}\n`).join('')
  );
}

/** A baseline measured once after a row's bracket, as information (a former baseline, a floor): its req/s and the row's ratio to it. */
type InfoRun = { baseline: string; rps: number; ratio: number };

/** The line under the table with each row's ratio to such a run (`relation`: "vs", "of"): information, no target. */
function infoReport(runs: Map<string, InfoRun>, heading: string, relation: string): string {
  if (runs.size === 0) return '';
  const parts = [...runs].map(([name, f]) => `${name} ${f.ratio.toFixed(2)} ${relation} ${f.baseline} (${Math.round(f.rps).toLocaleString('en-US')} req/s, one run after the bracket)`);
  return `${heading}, as information (no target): ${parts.join(', ')}\n`;
}

/** results.json fields of such a run, under the given names (none when the row has none). */
function infoFields(run: InfoRun | undefined, names: [baseline: string, rps: string, ratio: string]): Record<string, unknown> {
  if (!run) return {};
  return { [names[0]]: run.baseline, [names[1]]: Math.round(run.rps), [names[2]]: Number(run.ratio.toFixed(3)) };
}

/** results.json fields of a row's steal (shares rounded to 0.001). */
function stealFields(s: RowSteal | undefined): Record<string, unknown> {
  if (s?.run === undefined) return {};
  const r = (x: number | undefined) => (x === undefined ? null : Math.round(x * 1000) / 1000);
  return { steal_share: r(s.run), baseline_steal_share: s.baseline.map(r) };
}

async function main(): Promise<number> {
  const started = Date.now();
  const duration = durationSeconds();
  const only = process.argv.slice(2);
  const named = [OVERHEAD.name, PROXY_ADDED.name, PROXY_TRANSFORM.name, SCALING.name];
  const unknown = only.filter((n) => !scenarios.some((s) => s.name === n) && !named.includes(n));
  if (unknown.length) throw new BenchError(`unknown scenario(s) ${unknown.join(', ')}; known: ${[...scenarios.map((s) => s.name), ...named].join(', ')}`);
  const withScaling = !only.length || only.includes(SCALING.name);
  // The scaling row's baseline is its scenario's single-process figure, so naming the row runs that scenario too.
  const selected = only.length ? scenarios.filter((s) => only.includes(s.name) || (withScaling && s.name === SCALING.of)) : scenarios;
  const withOverhead = !only.length || only.includes(OVERHEAD.name);
  const withProxyAdded = !only.length || only.includes(PROXY_ADDED.name);
  const withProxyTransform = !only.length || only.includes(PROXY_TRANSFORM.name);
  for (const s of selected) if (!baselines[s.baseline]) throw new BenchError(`scenario ${s.name}: no baseline named ${s.baseline}`);

  // LOG_LEVEL=warn in both children: no per-request log line in either figure.
  const logLevel = process.env.LOG_LEVEL ?? 'warn';
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-bench-'));
  const servers: Server[] = [];
  let benchTable = false;
  // The Coffer child running now: the single process, then (for the scaling row) the cluster's primary.
  let coffer: Server | undefined;
  // From the first Coffer start to the end of the last measurement: the memory row.
  const sampler = new RssSampler(() => (coffer && !coffer.exited() ? { pid: coffer.pid, name: coffer.name } : undefined), MEMORY.interval_ms);
  cleanup = async () => {
    cleanup = async () => {};
    sampler.stop();
    // The raw-SQL baselines' table goes before PostgreSQL does.
    if (benchTable) await withPool(dataDir, 1, dropBenchTable).catch((err) => process.stderr.write(`could not drop ${BENCH_TABLE}: ${(err as Error).message}\n`));
    for (const s of servers) {
      // A killed Coffer leaves its embedded PostgreSQL running; stop it before deleting its files.
      if (!(await s.stop()) && s.name.startsWith('coffer')) stopOrphanPostgres(dataDir);
    }
    fs.rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    // Anything else running on the 2 cores skews every figure; say so up front.
    process.stdout.write(`load average before start: ${os.loadavg()[0].toFixed(2)} (1 min) on ${os.availableParallelism()} cores\n`);
    process.stdout.write(`starting Coffer (fresh embedded PostgreSQL in ${dataDir}) and the baseline, LOG_LEVEL=${logLevel}\n`);
    // DATABASE_URL='' so a URL in the caller's environment cannot point the bench at a real database.
    // BENCH_COFFER_NODE_OPTIONS becomes Coffer's NODE_OPTIONS alone (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", written when it stops).
    const cofferNodeOptions: Record<string, string> = process.env.BENCH_COFFER_NODE_OPTIONS ? { NODE_OPTIONS: process.env.BENCH_COFFER_NODE_OPTIONS } : {};
    // Started the way `npm start` starts it: the same environment, entry script and Node flags.
    const { env: startEnv, entry: cli, flags } = startCommand(root);
    const cofferEnv = { ...startEnv, DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: logLevel, OUTBOUND_ALLOWLIST: '127.0.0.1', ...googlePayEnv(dataDir), ...cofferNodeOptions };
    // For sandbox.overhead_p50 alone, which reads the sandbox's own time per run from Coffer's metrics (see restartCoffer).
    const metricsToken = randomBytes(24).toString('hex');
    coffer = startServer('coffer', cli, ['serve'], cofferEnv, await freePort(), flags);
    servers.push(coffer);
    // "The same process configuration": the baseline runs with Coffer's start environment and Node flags too.
    const baseline = startServer('baseline', path.join(import.meta.dirname, 'baseline-server.ts'), [], { ...startEnv, LOG_LEVEL: logLevel }, await freePort(), flags);
    servers.push(baseline);

    // The first start prints the new tenant's management key to stderr, indented by two spaces.
    const key = (await coffer.waitFor(/^ {2}(key_\S+)$/m, 120_000))[1];
    await Promise.all([waitReady(coffer, '/health/ready', 60_000), waitReady(baseline, '/health/ready', 60_000)]);

    // The minimal programs, each started (with Coffer's start environment and Node flags) the first time a run needs it.
    const minimal = new Map<MinimalName, Promise<Server>>();
    const minimalServer = (name: MinimalName): Promise<Server> => {
      let started = minimal.get(name);
      if (!started) {
        started = (async () => {
          const env = { ...startEnv, LOG_LEVEL: logLevel, ...(await minimalEnv(name)) };
          const script = name.startsWith('react.') ? 'minimal-react.ts' : 'minimal-proxy.ts';
          const server = startServer(name, path.join(import.meta.dirname, script), [], env, await freePort(), flags);
          servers.push(server);
          await waitReady(server, '/health/ready', 60_000);
          return server;
        })();
        minimal.set(name, started);
      }
      return started;
    };
    /** What each minimal program is given beyond Coffer's start environment (bench/minimal-env.ts). */
    const minimalEnv = async (name: MinimalName): Promise<Record<string, string>> => {
      if (name === 'proxy.minimal') return { DESTINATION: baseline.url };
      const database = databaseEnv(embeddedConnection(dataDir));
      // The vault's tokens, stored again in the program's own table.
      const tokens = async () => tokensEnv((await vault(ctx)).ids, CARD.data);
      switch (name) {
        case 'proxy.minimal_token':
          return { ...database, ...(await tokens()), DESTINATION: baseline.url };
        case 'react.minimal':
          return { ...database, REACT_CODE: REACTORS.trivial };
        case 'react.minimal_token':
          return { ...database, ...(await tokens()), REACT_CODE: REACTORS.oneToken };
      }
    };
    /** The pids of the minimal programs started so far: their CPU time (with their sandbox process's) is `minimal`. */
    const minimalPids = () => servers.filter((s) => minimal.has(s.name as MinimalName)).map((s) => s.pid);

    const ctx: Context = {
      key,
      destination: baseline.url,
      metricsToken,
      async call(method, p, json, as = key) {
        const res = await fetch(coffer!.url + p, {
          method,
          headers: { 'svc-api-key': as, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
          body: json === undefined ? undefined : JSON.stringify(json),
        });
        const text = await res.text();
        if (!res.ok) throw new BenchError(`set-up call ${method} ${p} answered ${res.status}: ${text.slice(0, 500)}`);
        return text ? JSON.parse(text) : undefined;
      },
    };

    // Per measured run, by label: the share of CPU time the host took away (bench/steal.ts),
    // and each process's CPU time per request (bench/cpu.ts).
    const stolen = new Map<string, number | undefined>();
    const cpuPer = new Map<string, CpuPerRequest | undefined>();
    const observed = async (label: string, run: () => Promise<Result>): Promise<Result> => {
      const before = cpuTimes();
      const cpuBefore = cpuSeconds(coffer!.pid, baseline.pid, minimalPids());
      const result = await run();
      cpuPer.set(label, perRequest(cpuBefore, cpuSeconds(coffer!.pid, baseline.pid, minimalPids()), result.requests.total));
      stolen.set(label, stealShare(before, cpuTimes()));
      return result;
    };

    /** `onRun` is called right before the measured run (after the probe and the warm-up). */
    const measure = async (label: string, t: Target | { db: DbTarget }, connections: number, onRun?: () => void): Promise<Result> => {
      sampler.phase = label;
      if ('db' in t) {
        benchTable = true;
        return withPool(dataDir, connections, async (pool) => {
          await createBenchTable(pool);
          const prepared = t.db.prepare ? await t.db.prepare(pool) : {};
          const op = () => t.db.op(pool, prepared);
          process.stdout.write(`${label}: warm-up ${WARMUP_SECONDS} s, then ${duration} s with ${connections} workers on ${connections} connections\n`);
          await opsLoad(`${label} (warm-up)`, op, connections, WARMUP_SECONDS);
          onRun?.();
          return observed(label, () => opsLoad(label, op, connections, duration));
        });
      }
      const server = t.server === 'baseline' ? baseline : t.server && t.server !== 'coffer' ? await minimalServer(t.server) : coffer!;
      const reqs = [t.requests(ctx, t.prepare ? await t.prepare(ctx) : {})].flat();
      await probe(label, server.url, reqs);
      process.stdout.write(`${label}: warm-up ${WARMUP_SECONDS} s, then ${duration} s at ${connections} connections\n`);
      await load(`${label} (warm-up)`, server.url, reqs, connections, WARMUP_SECONDS);
      onRun?.();
      return observed(label, () => load(label, server.url, reqs, connections, duration));
    };

    // Each scenario is bracketed by its baseline, measured right before and right after it: the
    // machine's speed drifts over minutes (2 shared cores), and the mean of the two cancels a drift.
    const rows: Row[] = [];
    const brackets = new Map<string, { before: number; after: number }>();
    /** Per row: the steal share of its measured run and of its baseline's runs. */
    const steals = new Map<string, RowSteal>();
    /** Per row with a former baseline: that baseline's req/s, measured once right after the bracket, and the ratio to it. */
    const formers = new Map<string, InfoRun>();
    /** Per row with a floor: the floor's req/s, measured once after the bracket (and the former baseline), and the share of it. */
    const floors = new Map<string, InfoRun>();
    /** `baseline` measured once for row `s`, whose measured run is `r`. */
    const measureOnce = async (s: Scenario, r: Result, baseline: string, role: string): Promise<InfoRun> => {
      const rps = (await measure(`${baseline} (${role} of ${s.name})`, baselines[baseline], s.connections)).requests.average;
      return { baseline, rps, ratio: r.requests.average / rps };
    };
    for (const s of selected) {
      const before = await measure(`${s.baseline} (before ${s.name})`, baselines[s.baseline], s.connections);
      const r = await measure(s.name, s, s.connections);
      const after = await measure(`${s.baseline} (after ${s.name})`, baselines[s.baseline], s.connections);
      const base = meanOf(before, after);
      if (s.formerBaseline) formers.set(s.name, await measureOnce(s, r, s.formerBaseline, 'former baseline'));
      if (s.floor) floors.set(s.name, await measureOnce(s, r, s.floor, 'floor'));
      brackets.set(s.name, { before: before.requests.average, after: after.requests.average });
      steals.set(s.name, { run: stolen.get(s.name), baseline: [stolen.get(`${s.baseline} (before ${s.name})`), stolen.get(`${s.baseline} (after ${s.name})`)] });
      const ratio = r.requests.average / base.rps;
      const misses = [
        ...(ratio < s.target ? [`ratio ${ratio.toFixed(3)} < ${s.target.toFixed(2)}`] : []),
        ...(s.p99_target_ms !== undefined && r.latency.p99 > s.p99_target_ms ? [`p99 ${r.latency.p99} ms > ${s.p99_target_ms} ms`] : []),
      ];
      rows.push({
        scenario: s.name,
        rps: r.requests.average,
        p50_ms: r.latency.p50,
        p99_ms: r.latency.p99,
        baseline: s.baseline,
        baseline_rps: base.rps,
        baseline_p50_ms: base.p50,
        baseline_p99_ms: base.p99,
        ratio,
        target_ratio: s.target,
        p99_target_ms: s.p99_target_ms,
        misses,
      });
    }

    /**
     * Stops the Coffer child (SIGTERM; its embedded PostgreSQL stops with it) and starts
     * another the same way on the same DATA_DIR: the tenant exists, so no key is printed, and
     * the management key, the application's key and the tokens from before still hold.
     */
    const restartCoffer = async (name: string, args: string[], env: Record<string, string>): Promise<Server> => {
      // bench_raw has served its baselines; drop it while its PostgreSQL runs.
      if (benchTable) {
        await withPool(dataDir, 1, dropBenchTable);
        benchTable = false;
      }
      const previous = coffer!;
      const stoppedCleanly = await previous.stop();
      servers.splice(servers.indexOf(previous), 1);
      sampler.phase = `start-up of ${name}`;
      // Killed after 20 s: its PostgreSQL is still running, and the next start adopts it (src/db/embedded/).
      if (!stoppedCleanly) process.stderr.write(`warning: Coffer did not stop within 20 s of SIGTERM and was killed\n`);
      coffer = startServer(name, cli, args, env, await freePort(), flags);
      servers.push(coffer);
      await waitReady(coffer, '/health/ready', 120_000);
      return coffer;
    };

    // Then: one connection, with no other load of the bench's on Coffer.
    if (withProxyAdded) sampler.phase = PROXY_ADDED.name;
    const added = withProxyAdded ? await measureProxyAdded(ctx, coffer.url, duration) : undefined;
    const addedMisses = added && added.overhead_ms > added.target_ms ? [`${added.overhead_ms} ms > ${added.target_ms} ms`] : [];
    if (withProxyTransform) sampler.phase = PROXY_TRANSFORM.name;
    const transform = withProxyTransform ? await measureProxyTransform(ctx, coffer.url, duration) : undefined;
    const transformMisses = transform && transform.overhead_ms > transform.target_ms ? [`${transform.overhead_ms} ms > ${transform.target_ms} ms`] : [];
    // Metrics cost every request its counting (~8% of GET /applications/key's CPU), so only this
    // measurement runs with them: on a Coffer restarted with a METRICS_TOKEN.
    if (withOverhead) {
      process.stdout.write(`${OVERHEAD.name}: restarting Coffer with METRICS_TOKEN set, to read the sandbox's own time per run\n`);
      await restartCoffer('coffer (metrics on)', ['serve'], { ...cofferEnv, METRICS_TOKEN: metricsToken });
      sampler.phase = OVERHEAD.name;
    }
    const overhead = withOverhead ? await measureOverhead(ctx, coffer.url, duration) : undefined;
    // p50 <= target exactly when at least half the runs took at most the target (a bucket bound).
    const overheadMisses =
      overhead?.sandbox && overhead.sandbox.runs_within_target < 0.5
        ? [`sandbox run p50 ${overhead.sandbox.run_p50_ms ?? '> 300000'} ms > ${overhead.target_ms} ms`]
        : [];

    // Last: the same Coffer as a cluster on the same database. Only the single process is restarted; the baseline child stays.
    let scalingDetail = '';
    const extras = new Map<string, Record<string, unknown>>();
    if (withScaling) {
      const single = rows.find((r) => r.scenario === SCALING.of)!;
      const scenario = scenarios.find((s) => s.name === SCALING.of)!;
      process.stdout.write(`${SCALING.name}: stopping Coffer (SIGTERM), starting serve --workers ${SCALING.workers} on the same DATA_DIR\n`);
      await restartCoffer(`coffer --workers ${SCALING.workers}`, ['serve', '--workers', String(SCALING.workers)], cofferEnv);
      const workers = await waitWorkersServing(coffer, SCALING.workers, 120_000);
      const cpuBefore = new Map<number, number>();
      const result = await measure(SCALING.name, scenario, scenario.connections, () => {
        for (const pid of workers) cpuBefore.set(pid, statSeconds(String(pid)) ?? NaN);
      });
      const cpu = workers.map((pid) => (statSeconds(String(pid)) ?? NaN) - cpuBefore.get(pid)!);
      const totalCpu = cpu.reduce((a, b) => a + b, 0);
      const shares = cpu.map((c) => Math.round((c / totalCpu) * 1000) / 1000);
      // A worker that joined late (or died) leaves every connection to the other: that is not a 2-worker figure.
      if (!shares.every((x) => x >= MIN_WORKER_SHARE)) {
        throw new BenchError(`${SCALING.name}: the workers' shares of CPU time during the run were ${shares.join(', ')} (pids ${workers.join(', ')}); each needs ${MIN_WORKER_SHARE}`);
      }
      const ratio = result.requests.average / single.rps;
      steals.set(SCALING.name, { run: stolen.get(SCALING.name), baseline: [steals.get(SCALING.of)?.run] });
      rows.push({
        scenario: SCALING.name,
        rps: result.requests.average,
        p50_ms: result.latency.p50,
        p99_ms: result.latency.p99,
        baseline: SCALING.of,
        baseline_rps: single.rps,
        baseline_p50_ms: single.p50_ms,
        baseline_p99_ms: single.p99_ms,
        ratio,
        target_ratio: SCALING.target,
        misses: ratio < SCALING.target ? [`ratio ${ratio.toFixed(3)} < ${SCALING.target.toFixed(2)}`] : [],
      });
      extras.set(SCALING.name, { workers: SCALING.workers, worker_cpu_share: shares, worker_cpu_s: cpu.map((c) => Math.round(c * 100) / 100) });
      scalingDetail =
        `${SCALING.name}: serve --workers ${SCALING.workers}, ${scenario.connections} connections; CPU time of the workers during the run` +
        ` ${cpu.map((c) => `${c.toFixed(1)} s`).join(' + ')} (shares ${shares.join(' / ')}); baseline = ${SCALING.of} above (1 process)\n`;
    }

    const memory = memoryRow(sampler.stop());
    const memoryMisses = memory.peak_rss_mb > memory.target_mb ? [`${memory.peak_rss_mb} MB > ${memory.target_mb} MB`] : [];
    const valueRows: ValueRow[] = [{ scenario: memory.scenario, value: `${memory.peak_rss_mb.toFixed(0)} MB`, target: `<= ${memory.target_mb} MB`, misses: memoryMisses }];

    process.stdout.write(`\n${table(rows, valueRows)}\n\n`);
    process.stdout.write(stealReport(rows.map((r) => [r.scenario, steals.get(r.scenario)])));
    process.stdout.write(infoReport(formers, 'former baselines', 'vs'));
    process.stdout.write(infoReport(floors, 'floors, the least program doing the whole job', 'of'));
    process.stdout.write(cpuReport(rows.map((r) => [r.scenario, cpuPer.get(r.scenario)])));
    // The minimal baselines' own figures, for the budget: a ratio target is the scenario's total against these.
    process.stdout.write(cpuReport([...minimal.keys()].flatMap((name) => [...cpuPer.keys()].filter((label) => label.startsWith(`${name} `)).map((label) => [label, cpuPer.get(label)] as [string, CpuPerRequest | undefined])), 'the minimal baselines\' runs'));
    process.stdout.write(scalingDetail);
    process.stdout.write(
      `${memory.scenario}: ${memory.peak_rss_mb} MB (target <= ${memory.target_mb} MB) ${memoryMisses.length ? 'FAIL' : 'PASS'}, of ${memory.server};` +
        ` VmRSS summed over the service's processes (embedded PostgreSQL not counted), sampled every ${memory.interval_ms} ms\n`,
    );
    for (const b of memory.by_server) {
      const parts = b.process_rss_mb.map((rss, i) => `${rss} (anon ${b.process_anon_mb[i]})`).join(' + ');
      process.stdout.write(
        `  ${b.server}: peak ${b.peak_rss_mb} MB; sampled ${b.sampled_peak_mb} MB = ${parts} MB during ${b.during};` +
          ` largest VmHWM of one process ${b.process_hwm_mb} MB; ${b.samples} samples\n` +
          `    largest sum during each: ${Object.entries(b.by_phase).map(([during, v]) => `${during} ${v.toFixed(0)}`).join(', ')} (MB)\n`,
      );
    }
    if (overhead) {
      process.stdout.write(
        `${overhead.scenario}: ${overhead.sandbox!.run_p50_ms ?? '-'} ms (target <= ${overhead.target_ms} ms) ${overheadMisses.length ? 'FAIL' : 'PASS'}` +
          ` = p50 of the sandbox's own time per react call (Coffer's metrics, ${overhead.sandbox!.runs} runs, ${Math.round(overhead.sandbox!.runs_within_target * 100)}% within ${overhead.target_ms} ms);` +
          ` upper bound ${overhead.overhead_ms.toFixed(3)} ms = react.trivial p50 ${overhead.p50_ms} ms - auth p50 ${overhead.baseline_p50_ms} ms, 1 connection, ${overhead.samples} pairs` +
          ` (p99 ${overhead.p99_ms} and ${overhead.baseline_p99_ms} ms)\n`,
      );
    }
    if (added) {
      process.stdout.write(
        `${added.scenario}: ${added.overhead_ms.toFixed(3)} ms (target <= ${added.target_ms} ms) ${addedMisses.length ? 'FAIL' : 'PASS'}` +
          ` = proxy.passthrough p50 ${added.p50_ms} ms - echo.direct p50 ${added.baseline_p50_ms} ms, 1 connection each, ${added.samples} pairs` +
          ` (p99 ${added.p99_ms} and ${added.baseline_p99_ms} ms)\n`,
      );
    }
    if (transform) {
      process.stdout.write(
        `${transform.scenario}: ${transform.overhead_ms.toFixed(3)} ms (target <= ${transform.target_ms} ms) ${transformMisses.length ? 'FAIL' : 'PASS'}` +
          ` = a proxy call through a request transform p50 ${transform.p50_ms} ms - proxy.passthrough p50 ${transform.baseline_p50_ms} ms, 1 connection, ${transform.samples} pairs` +
          ` (p99 ${transform.p99_ms} and ${transform.baseline_p99_ms} ms)\n`,
      );
    }
    process.stdout.write('\n');
    const results = rows.map((r) => ({
      scenario: r.scenario,
      rps: Math.round(r.rps),
      p50_ms: r.p50_ms,
      p99_ms: r.p99_ms,
      baseline: r.baseline,
      baseline_rps: Math.round(r.baseline_rps),
      ratio: Number(r.ratio.toFixed(3)),
      target_ratio: r.target_ratio,
      ...(r.p99_target_ms !== undefined ? { p99_target_ms: r.p99_target_ms } : {}),
      ...(brackets.has(r.scenario)
        ? { baseline_rps_before: Math.round(brackets.get(r.scenario)!.before), baseline_rps_after: Math.round(brackets.get(r.scenario)!.after) }
        : {}),
      ...infoFields(formers.get(r.scenario), ['former_baseline', 'former_baseline_rps', 'former_ratio']),
      ...infoFields(floors.get(r.scenario), ['floor', 'floor_rps', 'floor_ratio']),
      ...stealFields(steals.get(r.scenario)),
      ...(cpuPer.get(r.scenario) ? { cpu_us_per_request: cpuPer.get(r.scenario) } : {}),
      ...extras.get(r.scenario),
    }));
    const latencyRows = [overhead, added, transform].filter((r) => r !== undefined);
    fs.writeFileSync(resultsPath, `${JSON.stringify([...results, ...latencyRows, memory], null, 2)}\n`);
    const checked = [
      ...rows,
      { scenario: memory.scenario, misses: memoryMisses },
      ...(overhead ? [{ scenario: overhead.scenario, misses: overheadMisses }] : []),
      ...(added ? [{ scenario: added.scenario, misses: addedMisses }] : []),
      ...(transform ? [{ scenario: transform.scenario, misses: transformMisses }] : []),
    ];
    const failed = checked.filter((r) => r.misses.length > 0);
    process.stdout.write(
      failed.length
        ? `${failed.length} of ${checked.length} scenario(s) MISSED their target: ${failed.map((r) => `${r.scenario} (${r.misses.join('; ')})`).join(', ')}\n`
        : `all ${checked.length} scenario(s) met their target\n`,
    );
    process.stdout.write(`results written to ${path.relative(root, resultsPath)}\n`);
    process.stdout.write(`load average at the end: ${os.loadavg()[0].toFixed(2)} (1 min); ${((Date.now() - started) / 1000).toFixed(0)} s from start to here\n`);
    return 0;
  } finally {
    await cleanup();
  }
}

/** A baseline's figures as the mean of its runs before and after the scenario. */
function meanOf(a: Result, b: Result): { rps: number; p50: number; p99: number } {
  const mean = (x: number, y: number) => Math.round(((x + y) / 2) * 100) / 100;
  return { rps: (a.requests.average + b.requests.average) / 2, p50: mean(a.latency.p50, b.latency.p50), p99: mean(a.latency.p99, b.latency.p99) };
}

/** A pool on Coffer's embedded PostgreSQL for the length of `fn`. */
async function withPool<T>(dataDir: string, size: number, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ ...embeddedConnection(dataDir), max: size });
  pool.on('error', () => {}); // an idle client dropped at shutdown is not a finding
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

/** Last resort after SIGKILLing Coffer: its PostgreSQL runs detached, so signal it by the pid in postmaster.pid. */
function stopOrphanPostgres(dataDir: string): void {
  try {
    const pid = Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
    if (pid > 0) process.kill(pid, 'SIGQUIT');
  } catch {
    // no pid file: PostgreSQL already stopped
  }
}

let cleanup = async () => {};
let interrupted = false;
// Ctrl-C still stops the children and removes the temp dir.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping servers\n`);
    void cleanup().finally(() => process.exit(128 + os.constants.signals[signal]));
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    // Runs cut off by the clean-up (a dropped table, stopped servers) are not failures to report.
    if (interrupted) return;
    process.stderr.write(`\nBENCH FAILED: ${err instanceof BenchError ? err.message : (err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  },
);
