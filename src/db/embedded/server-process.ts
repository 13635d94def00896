import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import type { Ids } from './location.ts';

/** The server process itself: finding one running, starting and stopping it, and reaching it. */

export type Running = { url: string; port: number; pid: number };

/** A server is running when postmaster.pid names a live process that accepts our login. */
export async function findRunning(pgdata: string, password: string): Promise<Running | undefined> {
  const { pid, port } = readPostmasterFile(pgdata) ?? {};
  if (!pid || !port || !isAlive(pid)) return undefined;
  if (!isPostgresProcess(pid)) {
    // After a reboot the old pid can belong to an unrelated process; the lock is stale.
    fs.rmSync(path.join(pgdata, 'postmaster.pid'), { force: true });
    return undefined;
  }
  const url = connectionUrl(port, password);
  // A server that is still starting up refuses connections for a moment.
  for (let i = 0; i < 50; i++) {
    if (await canConnect(url)) return { url, port, pid };
    if (!isAlive(pid)) return undefined;
    await sleep(100);
  }
  return undefined;
}

export function postmasterPid(pgdata: string): number | undefined {
  const pid = readPostmasterFile(pgdata)?.pid;
  return pid && isAlive(pid) ? pid : undefined;
}

/** PostgreSQL's own lock file in pgdata: the postmaster's pid and port, or undefined without one. */
export function readPostmasterFile(pgdata: string): { pid: number; port: number } | undefined {
  try {
    const lines = fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  } catch {
    return undefined;
  }
}

/** What the embedded server runs with beyond PostgreSQL's defaults (docs/operations.md). */
const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  'unix_socket_directories=',
  'max_connections=300',
  // A new 16 MB WAL segment is not zero-filled first. Under a steady stream of writes the
  // commit that needed a new segment waited for that fill, and every request in its batch
  // with it: a tail of ~50 ms at p99 (docs/decisions.md, "Performance").
  'wal_init_zero=off',
  // The server's own log goes to files it rotates itself (DATA_DIR/postgres/log: a week of
  // daily files, each emptied when its weekday comes round), where operators can read it. On a
  // pipe to Coffer it was thrown away, and a Coffer whose event loop stopped draining the pipe
  // would have had every PostgreSQL process that logs block on the write.
  'logging_collector=on',
  'log_directory=log',
  'log_filename=postgresql-%a.log',
  'log_truncate_on_rotation=on',
  'log_rotation_age=1d',
  'log_rotation_size=0',
];

/** Where the server's log files are (log_directory above, relative to its data directory). */
export function serverLogDir(pgdata: string): string {
  return path.join(pgdata, 'log');
}

export async function spawnServer(postgres: string, pgdata: string, ids: Ids | undefined, password: string): Promise<Running> {
  const port = await freePort();
  const child = spawn(
    postgres,
    ['-D', pgdata, '-p', String(port), ...SERVER_SETTINGS.flatMap((setting) => ['-c', setting])],
    // Detached: Ctrl-C in the terminal reaches Coffer, which then stops the server in order.
    { detached: true, stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}) },
  );
  const url = connectionUrl(port, password);
  // Until the logging collector takes over, the server writes to stderr: what a server that
  // fails at once (a bad setting, a taken port) says is there; later, in its log files.
  let stderr = '';
  let exited: Error | undefined;
  const ended = new Promise<never>((_resolve, reject) => {
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString();
    });
    child.on('exit', (code) => {
      exited = new Error(`embedded PostgreSQL exited (code ${code}): ${(stderr.trim() || lastLogLines(pgdata)).slice(-500)}`);
      reject(exited);
    });
    child.on('error', (err) => {
      exited = err;
      reject(err);
    });
  });
  ended.catch(() => {});
  // Its "ready to accept connections" goes to the collector's file: the server is ready when it
  // takes a session. Referenced until then: a server that exits at once must reach the exit
  // handler above, not leave an event loop with nothing in it and no message.
  const ready = (async () => {
    while (exited === undefined && !(await canConnect(url))) await sleep(50);
  })();
  await Promise.race([ready, ended]);
  if (exited) throw exited;
  child.removeAllListeners('exit');
  child.unref();
  // Stop keeping what it writes there once running; drained, so nothing can block on the pipe.
  child.stderr.removeAllListeners('data');
  child.stderr.resume();
  (child.stderr as unknown as { unref?: () => void }).unref?.();
  return { url, port, pid: child.pid! };
}

/** The end of the newest server log file, for an error message; empty when there is none to read. */
export function lastLogLines(pgdata: string): string {
  try {
    const dir = serverLogDir(pgdata);
    const newest = fs
      .readdirSync(dir)
      .map((name) => ({ name, at: fs.statSync(path.join(dir, name)).mtimeMs }))
      .sort((a, b) => b.at - a.at)[0];
    return newest ? fs.readFileSync(path.join(dir, newest.name), 'utf8').trim() : '';
  } catch {
    return '';
  }
}

/** SIGINT is PostgreSQL's "fast shutdown": sessions end, data is flushed, the lock file removed. */
export async function stopServer(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let i = 0; i < 200 && isAlive(pid); i++) await sleep(50);
}

export function connectionUrl(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

export async function canConnect(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.end();
    return true;
  } catch {
    return false;
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function isPostgresProcess(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    return true; // no /proc (not Linux): trust the pid
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
