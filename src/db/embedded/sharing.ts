import pg from 'pg';
import { sleep } from './server-process.ts';

/**
 * Which processes use one embedded server, so that it is stopped only by one that holds it
 * alone (start.ts's release()).
 *
 * Every process that uses the server holds this advisory lock, shared, on a session of its
 * own, from when it found or started the server until it lets go of it. The process that
 * stops the server first takes the lock exclusively, which it cannot while anyone else holds
 * it, and keeps it until the server is down; one that arrives meanwhile cannot take its share,
 * so it waits for the server to go and starts it again instead of being cut off mid-work.
 * (Counting sessions alone left a gap: a process that had found the server but not yet
 * connected was not counted, and lost its database a moment later.)
 */
export const USERS_LOCK = [0x436f6666, 0x75736572]; // two int4 keys: apart from the bigint locks of migrations and requests

/** Whether the session's socket keeps the process running (Node's ref/unref). */
export function keepsAlive(client: pg.Client, on: boolean): void {
  const socket = (client as unknown as { connection?: { stream?: { ref?: () => void; unref?: () => void } } }).connection?.stream;
  if (on) socket?.ref?.();
  else socket?.unref?.();
}

/** The sessions holding USERS_LOCK are named, so that counting other sessions can leave them out. */
export const HOLD_NAME = 'coffer embedded server user';

/** A session holding USERS_LOCK shared, or undefined when the server is being stopped (or refuses us). */
export async function holdServer(url: string): Promise<pg.Client | undefined> {
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
 * Whether others use the server, asked on this process's own held session: 0 means it now
 * holds USERS_LOCK exclusively, which it keeps until the server is down. Other Coffer
 * processes hold the lock shared; anything else connected (cluster workers, a pg_dump) is
 * counted as a session. A process that has just exited may still show for a moment (its
 * backend has not noticed yet), so a refusal is looked at again for up to 2 s before it is
 * believed. Throws when the session was lost (the server crashed and restarted, say).
 */
export async function othersUsing(hold: pg.Client): Promise<number> {
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
export async function otherSessions(url: string): Promise<number> {
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

