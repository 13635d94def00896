import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../logger.ts';
import type { Ids } from './location.ts';
import { isAlive, sleep } from './server-process.ts';

/** Creating the cluster (initdb, once per DATA_DIR) and the runtime file beside it. */

/** DATA_DIR/postgres.json: the generated password, and the pid of the process that owns the running server. */
export type RuntimeFile = { password: string; owner_pid?: number };

export function readRuntime(runtimePath: string): RuntimeFile | undefined {
  try {
    return JSON.parse(fs.readFileSync(runtimePath, 'utf8')) as RuntimeFile;
  } catch {
    return undefined;
  }
}

/** initdb takes seconds; a lock holder that lives longer than this is not initialising any more. */
const INIT_WAIT_MS = 120_000;

/**
 * Two first starts on one DATA_DIR (a `serve` and an `init` at once) must not both run
 * initdb: each would write its own password to postgres.json, and the loser's could be left
 * there for the winner's cluster, locking every later start out. The lock file holds the pid
 * of the process initialising; one left by a process that died is taken over.
 */
export async function underInitLock(dataDir: string, fn: () => void): Promise<void> {
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
export function initialise(initdb: string, pgdata: string, runtimePath: string, ids: Ids | undefined, log: Logger): void {
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

export function writeRuntime(runtimePath: string, runtime: RuntimeFile): void {
  const tmp = `${runtimePath}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(runtime), { mode: 0o600 });
  fs.renameSync(tmp, runtimePath);
}

