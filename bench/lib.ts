/** Plumbing for bench/run.ts: server child processes, autocannon runs, the report table. */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import autocannon, { type Request as AutocannonRequest, type Result } from 'autocannon';

export type { Result };

/** One request a scenario sends; autocannon cycles through a scenario's list on every connection. */
export type Req = {
  method?: string;
  /** May name what an earlier request of the same connection captured: `/3ds/sessions/{id}/authenticate`. */
  path: string;
  headers?: Record<string, string>;
  json?: unknown;
  /** Keeps this field of the JSON response for the connection's next requests (their `{field}` in the path). */
  capture?: string;
};

const PLACEHOLDER = /\{([a-z_]+)\}/g;

/** `path` with its `{name}`s taken from `context`. */
function filled(path: string, context: Record<string, unknown>): string {
  return path.replace(PLACEHOLDER, (_, name: string) => encodeURIComponent(String(context[name])));
}

export class BenchError extends Error {}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export type Server = {
  name: string;
  url: string;
  pid: number;
  /** Whether the child has exited (a server should not, until stopped). */
  exited(): boolean;
  /** The last output of the child (stdout and stderr), for error messages. */
  output(): string;
  /** Resolves with the first match of `pattern` in the child's output. */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray>;
  /** SIGTERM, then SIGKILL after `timeoutMs`; resolves false if it had to be killed. */
  stop(timeoutMs?: number): Promise<boolean>;
};

const OUTPUT_LIMIT = 64 * 1024;

/**
 * Runs `script` in a child of this same Node binary: servers get a process (and, on a
 * 2-core machine, roughly a core) of their own, while autocannon runs here.
 */
export function startServer(name: string, script: string, args: string[], env: Record<string, string>, port: number, nodeFlags: string[] = []): Server {
  const child: ChildProcess = spawn(process.execPath, [...nodeFlags, script, ...args], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const watchers = new Set<() => void>();
  // Both pipes must be drained, or a chatty child blocks on a full pipe mid-benchmark.
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
    for (const w of watchers) w();
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  let hasExited = false;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      hasExited = true;
      for (const w of watchers) w();
      resolve();
    }),
  );

  return {
    name,
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    exited: () => hasExited,
    output: () => output,
    waitFor(pattern, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const match = output.match(pattern);
          if (match) done(() => resolve(match));
          else if (hasExited) done(() => reject(new BenchError(`${name} exited during start-up:\n${output}`)));
        };
        const timer = setTimeout(() => done(() => reject(new BenchError(`${name}: no ${pattern} in its output after ${timeoutMs} ms:\n${output}`))), timeoutMs);
        const done = (settle: () => void) => {
          clearTimeout(timer);
          watchers.delete(check);
          settle();
        };
        watchers.add(check);
        check();
      });
    },
    async stop(timeoutMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return true;
      child.kill('SIGTERM');
      const timer = new Promise<false>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
      if (await Promise.race([exit.then(() => true), timer])) return true;
      child.kill('SIGKILL');
      await exit;
      return false;
    },
  };
}

/**
 * How `npm start` runs Coffer (package.json's start script: `[NAME=${NAME:-default} …] [exec] node
 * <flags> <entry> serve`), so the bench measures the service as it is started: the environment
 * the script sets (a variable already in this process's environment keeps its value, as in the
 * script), the Node flags and the entry script's path.
 */
export function startCommand(root: string): { env: Record<string, string>; flags: string[]; entry: string } {
  const start: string = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  const words = start.split(/\s+/);
  const env: Record<string, string> = {};
  for (let m; words.length > 0 && (m = /^([A-Z_][A-Z0-9_]*)=\$\{\1:-([^}]*)\}$/.exec(words[0])); words.shift()) env[m[1]] = process.env[m[1]] ?? m[2];
  if (words[0] === 'exec') words.shift();
  const at = words.findIndex((w, i) => i > 0 && !w.startsWith('-'));
  if (words[0] !== 'node' || at < 0 || words[at + 1] !== 'serve') throw new BenchError(`package.json's start script is not "[NAME=\${NAME:-value} …] [exec] node [flags] <entry> serve": ${start}`);
  return { env, flags: words.slice(1, at), entry: path.join(root, words[at]) };
}

/** Polls `path` until it answers 2xx, so no measurement starts against a half-started server. */
export async function waitReady(server: Server, path: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(server.url + path);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (server.exited()) throw new BenchError(`${server.name} exited during start-up:\n${server.output()}`);
    if (Date.now() > deadline) throw new BenchError(`${server.name} not ready at ${path} after ${timeoutMs} ms:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function toAutocannon(req: Req): AutocannonRequest {
  const headers = { ...req.headers };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['content-type'] = 'application/json';
  }
  const out: AutocannonRequest = { method: req.method ?? 'GET', path: req.path, headers, body };
  if (req.path.includes('{')) out.setupRequest = (r, context) => ({ ...r, path: filled(req.path, context) });
  const capture = req.capture;
  if (capture) {
    out.onResponse = (status, text, context) => {
      if (status < 300) context[capture] = (JSON.parse(text) as Record<string, unknown>)[capture];
    };
  }
  return out;
}

/** One request of each kind sent by hand first: a wrong key or path fails here with the server's answer, not as a table of 401s. */
export async function probe(label: string, url: string, reqs: Req[]): Promise<void> {
  const context: Record<string, unknown> = {};
  for (const req of reqs) {
    const r = toAutocannon(req);
    const path = filled(req.path, context);
    const res = await fetch(url + path, { method: r.method, headers: r.headers, body: r.body });
    const text = await res.text();
    if (!res.ok) throw new BenchError(`${label}: ${r.method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    if (req.capture) context[req.capture] = (JSON.parse(text) as Record<string, unknown>)[req.capture];
  }
}

/** One autocannon run; any non-2xx, error or timeout makes the figure meaningless, so it throws. */
export async function load(label: string, url: string, reqs: Req[], connections: number, seconds: number): Promise<Result> {
  const result = await autocannon({ url, connections, duration: seconds, requests: reqs.map(toAutocannon) });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    const codes = Object.entries(result.statusCodeStats).map(([code, s]) => `${code}×${s.count}`).join(', ');
    throw new BenchError(
      `${label}: ${result['2xx']} 2xx but ${result.non2xx} non-2xx (${codes}), ${result.errors} errors, ${result.timeouts} timeouts`,
    );
  }
  if (result['2xx'] === 0) throw new BenchError(`${label}: no responses at all`);
  return result;
}

export type Row = {
  scenario: string;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  baseline: string;
  baseline_rps: number;
  baseline_p50_ms: number;
  baseline_p99_ms: number;
  ratio: number;
  target_ratio: number;
  /** The scenario's p99 limit, when it has one. */
  p99_target_ms?: number;
  /** Each target missed, in words; empty when the scenario passes. */
  misses: string[];
};

/** A table row that is not a throughput run (memory.peak_rss): one figure with its unit, shown in the ratio column. */
export type ValueRow = {
  scenario: string;
  /** The figure with its unit, e.g. "312 MB". */
  value: string;
  /** The target in words, e.g. "<= 400 MB". */
  target: string;
  misses: string[];
};

export function table(rows: Row[], values: ValueRow[] = []): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'baseline', 'req/s', 'p50 ms', 'p99 ms', 'ratio', 'target', 'p99 target', 'result'];
  const valueLines = values.map((v) => [v.scenario, '-', '-', '-', '-', '-', '-', '-', v.value, v.target, '-', v.misses.length === 0 ? 'PASS' : 'FAIL']);
  const lines = rows.map((r) => [
    r.scenario,
    Math.round(r.rps).toLocaleString('en-US'),
    String(r.p50_ms),
    String(r.p99_ms),
    r.baseline,
    Math.round(r.baseline_rps).toLocaleString('en-US'),
    String(r.baseline_p50_ms),
    String(r.baseline_p99_ms),
    r.ratio.toFixed(2),
    `>= ${r.target_ratio.toFixed(2)}`,
    r.p99_target_ms === undefined ? '-' : `<= ${r.p99_target_ms} ms`,
    // Both the ratio and (when set) the p99 target must be met.
    r.misses.length === 0 ? 'PASS' : 'FAIL',
  ]);
  lines.push(...valueLines);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  // Text columns left-aligned, numbers right-aligned.
  const left = new Set([0, 4, 11]);
  const fmt = (cells: string[]) => cells.map((c, i) => (left.has(i) ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [fmt(header), widths.map((w) => '-'.repeat(w)).join('  '), ...lines.map(fmt)].map((l) => l.trimEnd()).join('\n');
}
