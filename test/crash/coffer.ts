import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

/**
 * `coffer serve` as a child process that the crash test kills with SIGKILL and starts
 * again on the same DATA_DIR (and port), and the embedded PostgreSQL it leaves behind.
 */

const root = path.resolve(import.meta.dirname, '../..');

export type Started = { child: ChildProcess; pid: number; readyMs: number; exited: Promise<number | null> };

/** A Coffer deployment on one DATA_DIR: start it, kill it, start it again. */
export class Coffer {
  readonly url: string;
  readonly dataDir: string;
  private readonly env: NodeJS.ProcessEnv;
  private current: Started | undefined;
  /** Processes that exited on their own (not killed or stopped by the test): their exit code and the end of stderr. */
  readonly died: { pid: number; code: number | null; stderr: string }[] = [];
  private expected = new Set<ChildProcess>();
  /** The last process started, ready or not. */
  private spawned: { child: ChildProcess; exited: Promise<number | null> } | undefined;
  /** The last log lines of every process, for a report when something goes wrong. */
  private tail: string[] = [];
  /** Error-level log lines (pino level ≥ 50) seen across all processes, by message. */
  readonly errors = new Map<string, number>();

  /** When set (CRASH_LOG_DIR), every process's log is kept there as serve-<pid>.log. */
  private readonly logDir = process.env.CRASH_LOG_DIR || undefined;

  constructor(opts: { port: number; dataDir: string; env: Record<string, string> }) {
    this.url = `http://127.0.0.1:${opts.port}`;
    this.dataDir = opts.dataDir;
    const base = { ...process.env };
    delete base.DATABASE_URL;
    delete base.LOG_FORMAT; // JSON lines (stdout is a pipe), read below
    this.env = { ...base, LOG_LEVEL: 'info', HOST: '127.0.0.1', PORT: String(opts.port), DATA_DIR: opts.dataDir, ...opts.env };
  }

  get running(): Started | undefined {
    return this.current;
  }

  /** Runs a one-shot `coffer <args>` with the same settings. */
  cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, ['src/cli.ts', ...args], { cwd: root, env: this.env });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d) => (stdout += d));
      child.stderr.on('data', (d) => (stderr += d));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** Starts `coffer serve` and resolves once it logged "coffer ready"; rejects after `boundMs` or if it exits first. */
  start(boundMs: number): Promise<Started> {
    if (this.spawned && this.spawned.child.exitCode === null && this.spawned.child.signalCode === null) throw new Error('already running');
    const t0 = performance.now();
    const child = spawn(process.execPath, ['src/cli.ts', 'serve'], { cwd: root, env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<number | null>((r) => child.on('close', (code, signal) => r(signal ? null : code)));
    this.spawned = { child, exited };
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-4000)));
    return new Promise((resolve, reject) => {
      let ready = false;
      let partial = '';
      const timer = setTimeout(() => {
        this.expected.add(child);
        child.kill('SIGKILL');
        reject(new Error(`coffer serve was not ready within ${boundMs} ms\n${this.lastLines()}\n${stderr}`));
      }, boundMs);
      // Line by line, keeping only a tail: under load the log stream is large.
      child.stdout!.on('data', (chunk: Buffer) => {
        const lines = (partial + chunk.toString()).split('\n');
        partial = lines.pop()!;
        if (this.logDir) fs.appendFileSync(path.join(this.logDir, `serve-${child.pid}.log`), lines.join('\n') + (lines.length ? '\n' : ''));
        for (const line of lines) {
          this.tail.push(line);
          if (line.startsWith('{"level":5') || line.startsWith('{"level":6')) {
            const msg = /"msg":"([^"]*)"/.exec(line)?.[1] ?? line.slice(0, 120);
            this.errors.set(msg, (this.errors.get(msg) ?? 0) + 1);
          }
          if (!ready && line.includes('"msg":"coffer ready"')) {
            ready = true;
            clearTimeout(timer);
            this.current = { child, pid: child.pid!, readyMs: Math.round(performance.now() - t0), exited };
            resolve(this.current);
          }
        }
        if (this.tail.length > 400) this.tail = this.tail.slice(-200);
      });
      void exited.then((code) => {
        if (this.current?.child === child) this.current = undefined;
        if (!this.expected.has(child)) this.died.push({ pid: child.pid!, code, stderr: stderr.slice(-1500) });
        if (!ready) {
          clearTimeout(timer);
          reject(new Error(`coffer serve exited (${code}) before it was ready\n${this.lastLines()}\n${stderr}`));
        }
      });
    });
  }

  /** SIGKILL, as the OOM killer or a power cut would, ready or still starting; resolves once the process is gone. */
  async kill(): Promise<void> {
    const last = this.spawned;
    if (!last) return;
    this.expected.add(last.child);
    if (last.child.exitCode === null && last.child.signalCode === null) last.child.kill('SIGKILL');
    await last.exited;
    this.current = undefined;
  }

  /** SIGTERM and wait (bounded) for an orderly exit; resolves with the exit code, null on a timeout. */
  async stop(boundMs: number): Promise<number | null> {
    const cur = this.current;
    if (!cur) return 0;
    this.expected.add(cur.child);
    cur.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([cur.exited, new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), boundMs)))]);
    clearTimeout(timer);
    if (code === 'timeout') {
      cur.child.kill('SIGKILL');
      await cur.exited;
      return null;
    }
    return code;
  }

  lastLines(n = 30): string {
    return this.tail.slice(-n).join('\n');
  }

  /** The embedded server's postmaster, as its lock file names it (undefined without one). */
  postmasterPid(): number | undefined {
    try {
      const pid = Number(fs.readFileSync(path.join(this.dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
      return pid > 0 ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /** A connection URL for the embedded server, built as Coffer builds it (postmaster.pid port, postgres.json password). */
  embeddedUrl(): string {
    const lines = fs.readFileSync(path.join(this.dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n');
    const { password } = JSON.parse(fs.readFileSync(path.join(this.dataDir, 'postgres.json'), 'utf8')) as { password: string };
    return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${Number(lines[3])}/postgres`;
  }
}

/** Whether a process runs; a zombie (dead, not yet reaped by whoever adopted it) does not. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * Kills the embedded PostgreSQL the killed Coffer left running: only its postmaster (its
 * backends linger a moment and then notice), or its whole process group (it runs detached,
 * so the group is the postmaster's pid) — as if the machine had lost every process at once.
 */
export async function killPostgres(pid: number, what: 'postmaster' | 'group', dataDir: string): Promise<void> {
  // Only the postmaster of this DATA_DIR: a stale lock file may name a pid some other process has now.
  try {
    if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(path.join(dataDir, 'postgres'))) return;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || fs.existsSync('/proc/self')) return;
  }
  try {
    process.kill(what === 'group' ? -pid : pid, 'SIGKILL');
  } catch {
    return;
  }
  for (let i = 0; i < 100 && alive(pid); i++) await sleep(20);
}

/**
 * The client backends of the embedded postmaster (`postgres: <user> <db> <addr> …`), found
 * through /proc; empty where there is no /proc.
 */
export function clientBackends(postmaster: number): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const e of entries) {
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== postmaster) continue;
      if (fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').startsWith('postgres: postgres postgres ')) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
