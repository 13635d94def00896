import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { OffsetPage } from '../../http/pagination.ts';
import { IdParams, iso, problems, WRITE } from '../../http/schemas.ts';
import { toKeyResponse } from '../application-keys/routes.ts';
import { ApplicationSchema, CreateApplicationBody, ListApplicationsQuery, UpdateApplicationBody } from './schema.ts';
import type { ApplicationService, ApplicationView } from './service.ts';

const tags = ['applications'];

export function registerApplicationRoutes(app: FastifyInstance, applications: ApplicationService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/applications', {
    config: { access: { permissions: ['application:create'] } },
    schema: { tags, summary: 'Create an application', body: CreateApplicationBody, response: { 201: ApplicationSchema, ...problems(...WRITE) } },
  }, async (request, reply) => {
    const created = await applications.create(principalOf(request), request.body);
    return reply.code(201).send(toApplicationResponse(created));
  });

  r.get('/applications', {
    config: { access: { permissions: ['application:read'] } },
    schema: { tags, summary: 'List applications', querystring: ListApplicationsQuery, response: { 200: OffsetPage(ApplicationSchema), ...problems() } },
  }, async (request) => {
    const page = await applications.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(toApplicationResponse) };
  });

  // Every client's "who am I" call, answered from the service's cache: the JSON of a cached
  // view is kept with it (same view object, same body) instead of being rebuilt per request.
  const ownJson = new WeakMap<ApplicationView, string>();
  // Registered before /applications/:id so the static path wins.
  r.get('/applications/key', {
    config: { access: { permissions: ['application:read'] } },
    schema: { tags, summary: 'Get the application that owns the calling API key', response: { 200: ApplicationSchema, ...problems(404) } },
  }, async (request, reply) => {
    const view = await applications.getByKey(principalOf(request));
    let json = ownJson.get(view);
    if (json === undefined) {
      json = String(reply.serialize(toApplicationResponse(view)));
      ownJson.set(view, json);
    }
    // Already the route's serialization of its 200 schema: sent as is (the type provider only knows the object form).
    return reply.type('application/json; charset=utf-8').send(json as unknown as ReturnType<typeof toApplicationResponse>);
  });

  r.get('/applications/:id', {
    config: { access: { permissions: ['application:read'] } },
    schema: { tags, summary: 'Get an application', params: IdParams, response: { 200: ApplicationSchema, ...problems(404) } },
  }, async (request) => toApplicationResponse(await applications.get(principalOf(request), request.params.id)));

  r.put('/applications/:id', {
    config: { access: { permissions: ['application:update'] } },
    schema: { tags, summary: 'Update an application', params: IdParams, body: UpdateApplicationBody, response: { 200: ApplicationSchema, ...problems(404, ...WRITE) } },
  }, async (request) => toApplicationResponse(await applications.update(principalOf(request), request.params.id, request.body)));

  r.delete('/applications/:id', {
    config: { access: { permissions: ['application:delete'] } },
    schema: { tags, summary: 'Delete an application and its keys', params: IdParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await applications.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}

export function toApplicationResponse(a: ApplicationView) {
  return {
    id: a.id,
    tenant_id: a.tenant_id,
    name: a.name,
    ...(a.key !== undefined ? { key: a.key } : {}),
    keys: a.keys.map(toKeyResponse),
    type: a.type,
    permissions: a.permissions,
    // Public keys redact whatever a rule says: rules stored before public rules had to say so
    // are shown as they act.
    rules: a.type === 'public' ? a.rules.map((r) => ({ ...r, transform: 'redact' as const })) : a.rules,
    expires_at: iso(a.expires_at),
    created_by: a.created_by ?? undefined,
    created_at: a.created_at.toISOString(),
    modified_by: a.modified_by ?? undefined,
    modified_at: iso(a.modified_at),
  };
}
