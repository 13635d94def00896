/**
 * The `react.minimal` baseline: the least a sandboxed, audited call costs. A bare Fastify
 * route hands the request's args to a sandbox process of its own (bench/minimal-isolate.ts:
 * one warm isolate with Coffer's memory and time limits, over IPC as Coffer's sandbox
 * processes are), then commits one audit row, shaped as Coffer's audit_events, to the same
 * PostgreSQL before it answers with what the code returned. No auth, no reactor lookup, no
 * events, no stored result: what `react.trivial` costs beyond this is what Coffer adds.
 *
 * Given `tokens` (bench/minimal-token-work.ts), it is `react.minimal_token`: the args' token
 * expressions are replaced by the cards' data (one SELECT, AES-GCM and one committed audit row
 * per token) before the code runs, the least a call of `react.one_token` must do.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import pg from 'pg';
import { pino } from 'pino';
import type { AnswerMessage, CallMessage } from './minimal-isolate.ts';
import { databaseFromEnv, tokenWorkFromEnv } from './minimal-env.ts';
import type { TokenWork } from './minimal-token-work.ts';
import { SANDBOX_EXEC_ARGV } from '../src/sandbox/process/host.ts';

/** Coffer's defaults: DATABASE_POOL_SIZE, SANDBOX_NICE. */
const POOL_SIZE = 20;
const SANDBOX_NICE = 10;
export const AUDIT_TABLE = 'bench_audit';

export type MinimalReact = { app: ReturnType<typeof Fastify>; close(): Promise<void> };

/** `code` is what every call runs; `db` the pool's connection settings. */
export async function createMinimalReact(opts: { code: string; db: pg.PoolConfig; tokens?: TokenWork; logLevel?: string }): Promise<MinimalReact> {
  const pool = new pg.Pool({ ...opts.db, max: POOL_SIZE });
  pool.on('error', () => {}); // an idle client dropped when the database stops is not a finding
  // Coffer's audit table, indexes included (not its foreign key: there is no tenant here).
  await pool.query(`CREATE TABLE IF NOT EXISTS ${AUDIT_TABLE} (LIKE audit_events INCLUDING DEFAULTS INCLUDING INDEXES)`);
  // With the flags Coffer forks its sandbox processes with, and none of its own others.
  const child = fork(path.join(import.meta.dirname, 'minimal-isolate.ts'), [], {
    execArgv: SANDBOX_EXEC_ARGV,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'json',
  });
  try {
    os.setPriority(child.pid!, Math.min(19, os.getPriority(process.pid) + SANDBOX_NICE));
  } catch {
    // not permitted here: as in Coffer, the process keeps the parent's priority
  }
  await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', () => reject(new Error('the sandbox process exited during start-up')));
  });
  const waiting = new Map<number, (a: AnswerMessage) => void>();
  child.on('message', (a: AnswerMessage) => {
    waiting.get(a.id)?.(a);
    waiting.delete(a.id);
  });
  let next = 0;
  const run = (req: unknown) =>
    new Promise<AnswerMessage>((resolve) => {
      const id = ++next;
      waiting.set(id, resolve);
      child.send({ id, code: opts.code, req: JSON.stringify(req) } satisfies CallMessage);
    });

  const tenant = randomUUID();
  const reactor = randomUUID();
  const app = Fastify({ loggerInstance: pino({ level: opts.logLevel ?? 'info' }) });
  app.get('/health/ready', async () => ({ status: 'ready' }));
  app.post('/react', async (request, reply) => {
    let args = (request.body as { args?: unknown } | undefined)?.args ?? null;
    if (opts.tokens) {
      try {
        args = await opts.tokens.detokenizeValue(args);
      } catch (err) {
        return reply.code(422).send({ detail: (err as Error).message });
      }
    }
    const answer = await run({ args, configuration: {} });
    if (!answer.ok) return reply.code(422).send({ detail: answer.error });
    await pool.query({
      name: 'audit',
      text: `INSERT INTO ${AUDIT_TABLE} (id, tenant_id, entity_type, entity_id, operation, message) VALUES ($1, $2, 'reactor', $3, 'react', $4)`,
      values: [randomUUID(), tenant, reactor, `Reactor invoked (request ${randomUUID()})`],
    });
    return answer.value;
  });
  return {
    app,
    async close() {
      await app.close();
      child.disconnect();
      await Promise.all([pool.end(), opts.tokens?.close()]);
    },
  };
}

// Started as a child by bench/run.ts: PORT, HOST, LOG_LEVEL, REACT_CODE and the database (PG*) from the environment;
// for react.minimal_token also TOKEN_IDS (comma-separated) and TOKEN_CARD (JSON).
if (import.meta.main) {
  const env = process.env;
  const db = databaseFromEnv(env);
  const { app, close } = await createMinimalReact({ code: env.REACT_CODE!, db, tokens: await tokenWorkFromEnv(env, db), logLevel: env.LOG_LEVEL });
  await app.listen({ port: Number(env.PORT), host: env.HOST ?? '127.0.0.1' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void close().finally(() => process.exit(0)));
}
