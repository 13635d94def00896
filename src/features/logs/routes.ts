import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { CursorPage } from '../../http/pagination.ts';
import { problems } from '../../http/schemas.ts';
import { ENTITY_TYPES, LogEvent, LogQuery } from './schema.ts';
import type { LogService } from './service.ts';
import type { AuditEvent } from './store.ts';

/** Ids are given when an entry is written, entries are seen when their request commits. */
const FEED_NOTE =
  'Ordered by id, which is time-ordered (UUIDv7) and given when the entry is written. An entry becomes visible when the request that wrote it ' +
  'commits, and one written inside a long transaction (a request under SVC-IDEMPOTENCY-KEY commits only with its reply) ' +
  'can appear after newer ones. To follow the log as a feed, read from the newest again each time, down to a minute before the newest entry ' +
  'you already have (start_date), and skip the ids you have.';

export function registerLogRoutes(app: FastifyInstance, logs: LogService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get('/logs', {
    config: { access: { permissions: ['log:read'] } },
    schema: {
      tags: ['logs'],
      summary: 'List audit events, newest first',
      description: FEED_NOTE,
      querystring: LogQuery,
      response: { 200: CursorPage(LogEvent), ...problems() },
    },
  }, async (request) => {
    const page = await logs.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(toResponse) };
  });

  r.get('/logs/entity-types', {
    config: { access: { permissions: ['log:read'] } },
    schema: { tags: ['logs'], summary: 'The entity types that audit events name', response: { 200: Type.Array(Type.String()), ...problems() } },
  }, async () => [...ENTITY_TYPES]);
}

function toResponse(e: AuditEvent) {
  return {
    id: e.id,
    tenant_id: e.tenant_id,
    actor_id: e.actor_id,
    actor_type: e.actor_type,
    entity_type: e.entity_type,
    entity_id: e.entity_id,
    operation: e.operation,
    message: e.message,
    created_at: e.created_at.toISOString(),
  };
}
