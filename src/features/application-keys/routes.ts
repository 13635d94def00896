import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { OffsetPage, OffsetQuery } from '../../http/pagination.ts';
import { IdParams, problems, Uuid, WRITE } from '../../http/schemas.ts';
import { ApplicationKeySchema } from '../applications/schema.ts';
import type { ApplicationKeyService } from './service.ts';
import type { ApplicationKey } from './store.ts';

const tags = ['application keys'];
const KeyParams = Type.Object({ id: Uuid, keyId: Uuid });

export function registerApplicationKeyRoutes(app: FastifyInstance, keys: ApplicationKeyService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/applications/:id/keys', {
    config: { access: { permissions: ['application:create'] } },
    schema: { tags, summary: 'Create an application key (its value is returned only here)', params: IdParams, response: { 201: ApplicationKeySchema, ...problems(404, ...WRITE) } },
  }, async (request, reply) => {
    const issued = await keys.create(principalOf(request), request.params.id);
    return reply.code(201).send({ ...toKeyResponse(issued), key: issued.key });
  });

  r.get('/applications/:id/keys', {
    config: { access: { permissions: ['application:read'] } },
    schema: { tags, summary: 'List the keys of an application', params: IdParams, querystring: Type.Object(OffsetQuery()), response: { 200: OffsetPage(ApplicationKeySchema), ...problems(404) } },
  }, async (request) => {
    const page = await keys.list(principalOf(request), request.params.id, request.query);
    return { pagination: page.pagination, data: page.data.map(toKeyResponse) };
  });

  r.get('/applications/:id/keys/:keyId', {
    config: { access: { permissions: ['application:read'] } },
    schema: { tags, summary: 'Get an application key (without its value)', params: KeyParams, response: { 200: ApplicationKeySchema, ...problems(404) } },
  }, async (request) => toKeyResponse(await keys.get(principalOf(request), request.params.id, request.params.keyId)));

  r.delete('/applications/:id/keys/:keyId', {
    config: { access: { permissions: ['application:delete'] } },
    schema: { tags, summary: 'Delete an application key; it stops working at once', params: KeyParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await keys.remove(principalOf(request), request.params.id, request.params.keyId);
    return reply.code(204).send(null);
  });
}

export function toKeyResponse(k: ApplicationKey) {
  return { id: k.id, tenant_id: k.tenant_id, created_by: k.created_by ?? undefined, created_at: k.created_at.toISOString() };
}
