/**
 * `npm run test:hostile`: one tenant attacks a running Coffer with what its own code and its own
 * proxy destinations can do — reactors that exhaust memory in ways that end a V8 process,
 * endless loops in reactors and in an anonymous proxy's request transform, decompression bombs
 * behind a proxy with a response transform, and floods of `bt` calls — while another tenant's
 * token reads and reactor calls keep going. It prints one line:
 *
 *   hostile: attacks=N victim_requests=M victim_errors=0 victim_p99_ms=P coffer_restarts=0
 *
 * and fails when a victim request failed, when Coffer's process ended, or when the victim's p99
 * reached HOSTILE_P99_LIMIT_MS (250 by default). HOSTILE_SECONDS sets the attack's length (20).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { constants, createGzip } from 'node:zlib';
import { alive, Coffer, freePort, killPostgres, sleep } from '../crash/coffer.ts';

const num = (name: string, fallback: number) => {
  const v = Number(process.env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
};
const SECONDS = num('HOSTILE_SECONDS', 20);
const P99_LIMIT_MS = num('HOSTILE_P99_LIMIT_MS', 250);

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

type Answer = { status: number; body: any; ms: number };

async function request(url: string, method: string, p: string, opts: { key?: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number } = {}): Promise<Answer> {
  const t0 = performance.now();
  const res = await fetch(url + p, {
    method,
    headers: { ...(opts.key ? { 'svc-api-key': opts.key } : {}), ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 60_000),
  });
  const text = await res.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: kept as text
  }
  return { status: res.status, body, ms: performance.now() - t0 };
}

function percentile(ms: number[], q: number): number {
  const sorted = [...ms].sort((x, y) => x - y);
  return sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]) : Number.NaN;
}

async function must(url: string, key: string, method: string, p: string, body?: unknown): Promise<any> {
  const res = await request(url, method, p, { key, body });
  if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
  return res.body;
}

/** `mib` MiB of "a", gzip-compressed: a few hundred KB that expand a thousandfold. */
async function gzipBomb(mib: number): Promise<Buffer> {
  const gz = createGzip({ level: constants.Z_BEST_COMPRESSION });
  const chunks: Buffer[] = [];
  gz.on('data', (c: Buffer) => chunks.push(c));
  const done = new Promise((r) => gz.on('end', r));
  const block = Buffer.alloc(1024 * 1024, 'a');
  for (let i = 0; i < mib; i++) if (!gz.write(block)) await new Promise((r) => gz.once('drain', r));
  gz.end();
  await done;
  return Buffer.concat(chunks);
}

const CODE = {
  memory: `module.exports = () => { const o = {}; for (let i = 0; i < 2e6; i++) o['k' + i] = 1; return { raw: 1 }; };`,
  holey: `module.exports = () => { const a = []; a[5e7] = 1; for (let i = 0; i < 5e7; i++) a[i] = i; return { raw: 1 }; };`,
  loop: `module.exports = () => { for (;;) {} };`,
  transformLoop: `module.exports = async function () { for (;;) {} };`,
  flood: `module.exports = async (req) => { const big = Array.from({ length: 60000 }, (_, i) => 'v' + i); for (let i = 0; i < 1000; i++) { try { await req.bt.detokenize({ big }); } catch (e) {} } return { raw: 'flooded' }; };`,
  escape: `module.exports = async () => ({ raw: 'ok' }); }); (() => { const a = []; for (let i = 0; i < 1.5e6; i++) a.push({ i }); return a; })() || String({`,
  quick: `module.exports = async (req) => ({ raw: req.args.n + 1 });`,
  responseTransform: `module.exports = async function (req) { return { body: String(req.args.body).length }; };`,
};

async function main(): Promise<number> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-hostile-'));
  const bomb = await gzipBomb(256);
  const destination = http.createServer((req, res) => {
    if (req.url?.startsWith('/bomb')) {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': String(bomb.length) });
      res.end(bomb);
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    }
  });
  await new Promise<void>((r) => destination.listen(0, '127.0.0.1', r));
  const destinationUrl = `http://127.0.0.1:${(destination.address() as { port: number }).port}`;
  const coffer = new Coffer({
    port: await freePort(),
    dataDir,
    env: { OUTBOUND_ALLOWLIST: '127.0.0.1', REACTOR_TIMEOUT_MS: '3000', PROXY_TIMEOUT_MS: '3000' },
  });
  try {
    const attacker = JSON.parse((await coffer.cli(['init', '--json', '--tenant-name', 'Attacker'])).stdout) as { api_key: string };
    const victim = JSON.parse((await coffer.cli(['init', '--json', '--tenant-name', 'Victim'])).stdout) as { api_key: string };
    const started = await coffer.start(60_000);
    const url = coffer.url;

    // The victim: a token, a reader and a trivial reactor.
    const reader = (await must(url, victim.api_key, 'POST', '/applications', { name: 'reader', type: 'private', permissions: ['token:read', 'token:create', 'token:use'] })).key as string;
    const token = (await must(url, reader, 'POST', '/tokens', { type: 'token', data: { secret: 'the victim’s' } })).id as string;
    const quick = (await must(url, victim.api_key, 'POST', '/reactors', { name: 'quick', code: CODE.quick, configuration: {} })).id as string;

    // The attacker: reactors, an anonymous proxy with an endless transform, a proxy to a bomb.
    const a = attacker.api_key;
    const sdkApp = (await must(url, a, 'POST', '/applications', { name: 'sdk', type: 'private', permissions: ['token:read', 'token:use', 'token:create'] })).id as string;
    const invoker = (await must(url, a, 'POST', '/applications', { name: 'invoker', type: 'private', permissions: ['token:use'] })).key as string;
    const reactor = async (name: string, code: string, application?: string) =>
      (await must(url, a, 'POST', '/reactors', { name, code, configuration: {}, ...(application ? { application: { id: application } } : {}) })).id as string;
    const memory = await reactor('memory', CODE.memory);
    const holey = await reactor('holey', CODE.holey);
    const loop = await reactor('loop', CODE.loop);
    const flood = await reactor('flood', CODE.flood, sdkApp);
    const loopProxy = (await must(url, a, 'POST', '/proxies', { name: 'loop', destination_url: `${destinationUrl}/api`, require_auth: false, request_transform: { code: CODE.transformLoop } })).key as string;
    const bombProxy = (await must(url, a, 'POST', '/proxies', { name: 'bomb', destination_url: `${destinationUrl}/bomb`, require_auth: false, response_transform: { code: CODE.responseTransform } })).key as string;

    let attacks = 0;
    const unexpected: string[] = [];
    const stopAt = performance.now() + SECONDS * 1000;
    const attack = async (what: string, send: () => Promise<Answer>, ok: (a: Answer) => boolean) => {
      while (performance.now() < stopAt) {
        try {
          const res = await send();
          attacks++;
          if (!ok(res)) unexpected.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        } catch (err) {
          unexpected.push(`${what}: ${(err as Error).message}`);
          await sleep(100);
        }
      }
    };
    const failedCleanly = (r: Answer) => r.status >= 400 && r.status < 500 && r.status !== 404;
    const react = (id: string) => () => request(url, 'POST', `/reactors/${id}/react`, { key: invoker, body: {} });
    const proxied = (key: string) => () => request(url, 'POST', '/proxy', { headers: { 'svc-proxy-key': key }, body: { a: 1 } });

    const victimMs: number[] = [];
    const byKind = new Map<string, number[]>();
    const victimErrors: string[] = [];
    const victimLoop = async (kind: string, send: (n: number) => Promise<Answer>, ok: (r: Answer, n: number) => boolean) => {
      const mine = byKind.get(kind) ?? [];
      byKind.set(kind, mine);
      for (let n = 0; performance.now() < stopAt; n++) {
        try {
          const res = await send(n);
          victimMs.push(res.ms);
          mine.push(res.ms);
          if (!ok(res, n)) victimErrors.push(`${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
        } catch (err) {
          victimErrors.push((err as Error).message);
        }
      }
    };

    // Let the attack build up before the victim's figures count.
    const attackers = [
      attack('out-of-memory reactor', react(memory), failedCleanly),
      attack('holey-array reactor', react(holey), failedCleanly),
      ...Array.from({ length: 8 }, () => attack('endless reactor', react(loop), failedCleanly)),
      ...Array.from({ length: 4 }, () => attack('endless proxy transform', proxied(loopProxy), failedCleanly)),
      ...Array.from({ length: 2 }, () => attack('decompression bomb', proxied(bombProxy), (r) => r.status === 502 || failedCleanly(r))),
      ...Array.from({ length: 2 }, () => attack('bt flood', react(flood), (r) => r.status === 200 || failedCleanly(r))),
      attack('wrapper escape', () => request(url, 'POST', '/reactors', { key: a, body: { name: 'escape', code: CODE.escape, configuration: {} } }), (r) => r.status === 400),
    ];
    await sleep(1000);
    const victims = [
      ...Array.from({ length: 2 }, () => victimLoop('token read', () => request(url, 'GET', `/tokens/${token}`, { key: reader }), (r) => r.status === 200 && r.body?.id === token)),
      victimLoop('reactor call', (n) => request(url, 'POST', `/reactors/${quick}/react`, { key: reader, body: { args: { n } } }), (r, n) => r.status === 200 && r.body?.raw === n + 1),
    ];
    await Promise.all([...attackers, ...victims]);

    const stillUp = coffer.running?.pid === started.pid && (await request(url, 'GET', '/ping')).status === 200;
    const restarts = coffer.died.length + (stillUp ? 0 : 1);
    const p99 = percentile(victimMs, 0.99);
    say(`hostile: attacks=${attacks} victim_requests=${victimMs.length} victim_errors=${victimErrors.length} victim_p99_ms=${p99} coffer_restarts=${restarts}`);
    for (const [kind, ms] of byKind) say(`  ${kind}: ${ms.length} requests, p50 ${percentile(ms, 0.5)} ms, p99 ${percentile(ms, 0.99)} ms`);
    for (const e of victimErrors.slice(0, 5)) say(`  victim error: ${e}`);
    for (const e of [...new Set(unexpected)].slice(0, 10)) say(`  attack answered unexpectedly: ${e}`);
    for (const [msg, n] of coffer.errors) say(`  coffer logged an error ${n}×: ${msg}`);
    const failed = victimErrors.length > 0 || restarts > 0 || !(p99 < P99_LIMIT_MS) || unexpected.length > 0 || victimMs.length === 0;
    if (failed) say(`hostile: FAILED${coffer.died.length ? `\n${coffer.died.map((d) => d.stderr).join('\n')}` : ''}`);
    return failed ? 1 : 0;
  } finally {
    await coffer.stop(10_000);
    const pgPid = coffer.postmasterPid();
    if (pgPid !== undefined && alive(pgPid)) await killPostgres(pgPid, 'group', dataDir);
    await new Promise((r) => destination.close(r));
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

process.exit(await main());
