import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import type { Database } from '../../db/database.ts';
import { ApiError } from '../../http/errors.ts';
import { Problem } from '../../http/schemas.ts';

const Status = Type.Object({ status: Type.String() });

/** Liveness (the process answers) and readiness (it can reach its database). */
export function registerHealthRoutes(app: FastifyInstance, db: Database): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/ping', {
    config: { access: 'public' },
    schema: { tags: ['health'], summary: 'Liveness', response: { 200: Status } },
  }, async () => ({ status: 'ok' }));

  r.get('/health/ready', {
    config: { access: 'public' },
    schema: { tags: ['health'], summary: 'Readiness: the database answers', response: { 200: Status, 503: Problem } },
  }, async () => {
    try {
      await db.query('SELECT 1');
    } catch {
      throw new ApiError(503, 'The database is not reachable.');
    }
    return { status: 'ready' };
  });
}
