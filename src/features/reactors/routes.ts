import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { OffsetPage } from '../../http/pagination.ts';
import { IdParams, iso, problems, Uuid, WRITE } from '../../http/schemas.ts';
import { AsyncAccepted, ListReactorsQuery, ReactAsyncBody, ReactBody, ReactorBody, ReactorPatch, ReactorResponse, ReactorSchema } from './schema.ts';
import type { ReactorService, ReactorView } from './service.ts';

const tags = ['reactors'];
const Pending = Type.Object({ status: Type.Literal('pending') });

/** Invocation bodies are optional (args default to null): a POST without one is validated as {}. */
async function optionalBody(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

export function registerReactorRoutes(app: FastifyInstance, reactors: ReactorService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/reactors', {
    config: { access: { permissions: ['reactor:create'] } },
    schema: { tags, summary: 'Create a reactor', body: ReactorBody, response: { 201: ReactorSchema, ...problems(...WRITE) } },
  }, async (request, reply) => reply.code(201).send(toReactorResponse(await reactors.create(principalOf(request), request.body))));

  r.get('/reactors', {
    config: { access: { permissions: ['reactor:read'] } },
    schema: { tags, summary: 'List reactors', querystring: ListReactorsQuery, response: { 200: OffsetPage(ReactorSchema), ...problems() } },
  }, async (request) => {
    const page = await reactors.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(toReactorResponse) };
  });

  r.get('/reactors/:id', {
    config: { access: { permissions: ['reactor:read'] } },
    schema: { tags, summary: 'Get a reactor', params: IdParams, response: { 200: ReactorSchema, ...problems(404) } },
  }, async (request) => toReactorResponse(await reactors.get(principalOf(request), request.params.id)));

  r.put('/reactors/:id', {
    config: { access: { permissions: ['reactor:update'] } },
    schema: { tags, summary: 'Replace a reactor', params: IdParams, body: ReactorBody, response: { 200: ReactorSchema, ...problems(404, ...WRITE) } },
  }, async (request) => toReactorResponse(await reactors.update(principalOf(request), request.params.id, request.body)));

  r.patch('/reactors/:id', {
    config: { access: { permissions: ['reactor:update'] } },
    schema: { tags, summary: 'Update a reactor (application/merge-patch+json)', params: IdParams, body: ReactorPatch, response: { 204: Type.Null(), ...problems(404, ...WRITE) } },
  }, async (request, reply) => {
    await reactors.patch(principalOf(request), request.params.id, request.body);
    return reply.code(204).send(null);
  });

  r.delete('/reactors/:id', {
    config: { access: { permissions: ['reactor:delete'] } },
    schema: { tags, summary: 'Delete a reactor', params: IdParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await reactors.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });

  r.post('/reactors/:id/react', {
    config: { access: { permissions: ['token:use'] } },
    preValidation: optionalBody,
    schema: {
      tags,
      summary: 'Invoke a reactor; with the deprecated callback_url it runs asynchronously',
      params: IdParams,
      body: ReactBody,
      response: { 200: ReactorResponse, 202: AsyncAccepted, ...problems(404, 408, 429, ...WRITE) },
    },
  }, async (request, reply) => {
    const principal = principalOf(request);
    const { args, callback_url } = request.body ?? {};
    if (callback_url) {
      const id = await reactors.reactAsync(principal, request.params.id, args, callback_url);
      return reply.code(202).send({ asyncReactorRequestId: id });
    }
    return reply.code(200).send(await reactors.react(principal, request.params.id, args));
  });

  r.post('/reactors/:id/react-async', {
    config: { access: { permissions: ['token:use'] } },
    preValidation: optionalBody,
    schema: { tags, summary: 'Invoke a reactor asynchronously', params: IdParams, body: ReactAsyncBody, response: { 202: AsyncAccepted, ...problems(404, ...WRITE) } },
  }, async (request, reply) => {
    const id = await reactors.reactAsync(principalOf(request), request.params.id, request.body?.args);
    return reply.code(202).send({ asyncReactorRequestId: id });
  });

  r.get('/reactors/:id/results/:request_id', {
    config: { access: { permissions: ['token:use'] } },
    schema: {
      tags,
      summary: 'The result of an asynchronous invocation: 202 while pending, the Reactor Response, or the run\'s error',
      params: Type.Object({ id: Uuid, request_id: Uuid }),
      response: { 200: ReactorResponse, 202: Pending, ...problems(404, 408, 413, 422, 429) },
    },
  }, async (request, reply) => {
    const result = await reactors.result(principalOf(request), request.params.id, request.params.request_id);
    return result === undefined ? reply.code(202).send({ status: 'pending' as const }) : reply.code(200).send(result);
  });
}

export function toReactorResponse(r: ReactorView) {
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    name: r.name,
    code: r.code,
    configuration: r.configuration,
    ...(r.application ? { application: r.application } : {}),
    created_by: r.created_by ?? undefined,
    created_at: r.created_at.toISOString(),
    modified_by: r.modified_by ?? undefined,
    modified_at: iso(r.modified_at),
  };
}
