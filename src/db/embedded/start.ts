import fs from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import type { Logger } from '../../logger.ts';
import { initialise, readRuntime, underInitLock, writeRuntime, type RuntimeFile } from './cluster.ts';
import { DEFAULT_EMBEDDED_POSTGRES_DIR, locate } from './location.ts';
import { findRunning, isAlive, postmasterPid, sleep, spawnServer, stopServer } from './server-process.ts';
import { holdServer, keepsAlive, otherSessions, othersUsing } from './sharing.ts';

/**
 * The embedded PostgreSQL: real server binaries shipped by the `embedded-postgres`
 * packages, with the cluster under DATA_DIR/postgres (as root in a private directory, a
 * link to it: location.ts). We drive the binaries directly rather than through the
 * package's class, because that class installs its own SIGINT/SIGTERM exit hooks and
 * always runs the server in our process group.
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

export async function startEmbeddedPostgres(
  dataDir: string,
  log: Logger,
  opts: { takeOwnership: boolean; systemDir?: string },
): Promise<EmbeddedServer> {
  const { bins, pgdata, ids } = await locate(dataDir, opts.systemDir ?? DEFAULT_EMBEDDED_POSTGRES_DIR, log);
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
      log.info({ port: running.port, owned: own, pgdata }, 'using the embedded PostgreSQL already running in DATA_DIR');
      return server(running.url, pgdata, runtimePath, runtime.password, hold, log);
    }
    try {
      const started = await spawnServer(bins.postgres, pgdata, ids, runtime.password);
      const hold = await holdServer(started.url);
      if (!hold) throw new Error('the embedded PostgreSQL started but refused a session');
      // Whoever starts the server stops it: a one-shot command leaves nothing running behind it.
      writeRuntime(runtimePath, { ...runtime, owner_pid: process.pid });
      log.info({ port: started.port, pgdata }, 'embedded PostgreSQL started');
      return server(started.url, pgdata, runtimePath, runtime.password, hold, log);
    } catch (err) {
      // Another process may have won the race for the lock file or the port; look again.
      if (attempt >= 5) throw err;
      await sleep(200 * attempt++);
    }
  }
}


/** How long a start waits for a server that another process is stopping. */
const STOPPING_WAIT_MS = 15_000;

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

