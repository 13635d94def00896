import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Database } from '../../db/database.ts';
import { ApiError } from '../../http/errors.ts';
import { Problem, problem } from '../../http/schemas.ts';

const Status = Type.Object({ status: Type.String() });

/**
 * How long the database has to answer the readiness query. A database that accepts
 * connections but does not answer (hung, or cut off without a reset) would otherwise leave
 * the check waiting for minutes, so that it never says 503 (docs/operations.md).
 */
export const READY_TIMEOUT_MS = 2000;

/** Liveness (the process answers) and readiness (it can reach its database). */
export function registerHealthRoutes(app: FastifyInstance, db: Database): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/ping', {
    config: { access: 'public' },
    schema: { tags: ['health'], summary: 'Liveness', response: { 200: Status } },
  }, async () => ({ status: 'ok' }));

  r.get('/health/ready', {
    config: { access: 'public' },
    // Problem inline, not by reference: health.test.ts serves these routes without the OpenAPI registration.
    schema: { tags: ['health'], summary: 'Readiness: the database answers', response: { 200: Status, 503: problem(503, Problem) } },
  }, async () => {
    const answered = await answersWithin(db, READY_TIMEOUT_MS);
    if (answered === 'timeout') throw new ApiError(503, `The database did not answer within ${READY_TIMEOUT_MS / 1000} s.`);
    if (answered === 'failed') throw new ApiError(503, 'The database is not reachable.');
    return { status: 'ready' };
  });
}

async function answersWithin(db: Database, ms: number): Promise<'ok' | 'failed' | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const query = db.query('SELECT 1').then(() => 'ok' as const, () => 'failed' as const);
  const late = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([query, late]);
  } finally {
    clearTimeout(timer);
  }
}
