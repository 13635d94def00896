import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { OffsetPage } from '../../http/pagination.ts';
import { IdParams, problems, WRITE } from '../../http/schemas.ts';
import { ConnectionSchema, CreateConnectionBody, ListConnectionsQuery, PatchConnectionBody } from './schema.ts';
import { type ConnectionService, presentConnection } from './service.ts';

const tags = ['connections'];

export function registerConnectionRoutes(app: FastifyInstance, connections: ConnectionService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/orchestration/connections', {
    config: { access: { permissions: ['connection:create'] } },
    schema: { tags, summary: 'Create a connection: a processor account transactions are made through', body: CreateConnectionBody, response: { 201: ConnectionSchema, ...problems(...WRITE) } },
  }, async (request, reply) => reply.code(201).send(presentConnection(await connections.create(principalOf(request), request.body))));

  r.get('/orchestration/connections', {
    config: { access: { permissions: ['connection:read'] } },
    schema: { tags, summary: 'List connections', querystring: ListConnectionsQuery, response: { 200: OffsetPage(ConnectionSchema), ...problems() } },
  }, async (request) => {
    const page = await connections.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(presentConnection) };
  });

  r.get('/orchestration/connections/:id', {
    config: { access: { permissions: ['connection:read'] } },
    schema: { tags, summary: 'Get a connection (never its credentials)', params: IdParams, response: { 200: ConnectionSchema, ...problems(404) } },
  }, async (request) => presentConnection(await connections.get(principalOf(request), request.params.id)));

  r.patch('/orchestration/connections/:id', {
    config: { access: { permissions: ['connection:update'] } },
    schema: {
      tags,
      summary: 'Update a connection (application/merge-patch+json): settings merged, credentials replaced whole',
      params: IdParams,
      body: PatchConnectionBody,
      response: { 200: ConnectionSchema, ...problems(404, ...WRITE) },
    },
  }, async (request) => presentConnection(await connections.update(principalOf(request), request.params.id, request.body)));

  r.delete('/orchestration/connections/:id', {
    config: { access: { permissions: ['connection:delete'] } },
    schema: { tags, summary: 'Delete a connection: no new transactions; its transactions still capture, void and refund', params: IdParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await connections.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}
