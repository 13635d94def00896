import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { reapplyCors } from '../../http/cors.ts';
import { unexpectedError } from '../../http/errors.ts';
import { OffsetPage } from '../../http/pagination.ts';
import { IdParams, iso, problems, WRITE } from '../../http/schemas.ts';
import { InvocationResponses, ListProxiesQuery, ProxyBody, ProxyPatch, ProxySchema } from './schema.ts';
import type { ProxyService, ProxyView } from './service.ts';

const tags = ['proxies'];
const INVOKE_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
export const DESTINATION_STATUS = 'svc-proxy-destination-status';
/** The destination's x-request-id: the name of Coffer's own is taken (see the invoke handler). */
export const DESTINATION_REQUEST_ID = 'svc-proxy-destination-request-id';
const REQUEST_ID = 'x-request-id';

export function registerProxyRoutes(app: FastifyInstance, proxies: ProxyService, opts: { maxBodyBytes: number }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/proxies', {
    config: { access: { permissions: ['proxy:create'] } },
    schema: { tags, summary: 'Create a proxy; its invocation key is generated', body: ProxyBody, response: { 201: ProxySchema, ...problems(...WRITE) } },
  }, async (request, reply) => reply.code(201).send(toProxyResponse(await proxies.create(principalOf(request), request.body))));

  r.get('/proxies', {
    config: { access: { permissions: ['proxy:read'] } },
    schema: { tags, summary: 'List proxies', querystring: ListProxiesQuery, response: { 200: OffsetPage(ProxySchema), ...problems() } },
  }, async (request) => {
    const page = await proxies.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(toProxyResponse) };
  });

  r.get('/proxies/:id', {
    config: { access: { permissions: ['proxy:read'] } },
    schema: { tags, summary: 'Get a proxy', params: IdParams, response: { 200: ProxySchema, ...problems(404) } },
  }, async (request) => toProxyResponse(await proxies.get(principalOf(request), request.params.id)));

  r.put('/proxies/:id', {
    config: { access: { permissions: ['proxy:update'] } },
    schema: { tags, summary: 'Replace a proxy (its key is kept)', params: IdParams, body: ProxyBody, response: { 200: ProxySchema, ...problems(404, ...WRITE) } },
  }, async (request) => toProxyResponse(await proxies.update(principalOf(request), request.params.id, request.body)));

  r.patch('/proxies/:id', {
    config: { access: { permissions: ['proxy:update'] } },
    schema: {
      tags,
      summary: 'Change some fields of a proxy (application/merge-patch+json)',
      params: IdParams,
      body: ProxyPatch,
      response: { 204: Type.Null(), ...problems(404, ...WRITE) },
    },
  }, async (request, reply) => {
    await proxies.patch(principalOf(request), request.params.id, request.body as Record<string, unknown>);
    return reply.code(204).send(null);
  });

  r.delete('/proxies/:id', {
    config: { access: { permissions: ['proxy:delete'] } },
    schema: { tags, summary: 'Delete a proxy; its key stops working at once', params: IdParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await proxies.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });

  // Invocation takes any body as raw bytes, so it lives in a context of its own: the other
  // routes keep their JSON and merge-patch parsers, and every error here is a proxy_error.
  app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: opts.maxBodyBytes }, (_request, body, done) => done(null, body));
    scope.setErrorHandler((err: FastifyError, request, reply) => sendProxyError(proxies, err, request, reply));
    // The browser's server is Coffer: on every answer, proxy_error included, its CORS headers
    // stand instead of the destination's (which the handler copies and sendProxyError strips).
    scope.addHook('onSend', (_request, reply, payload, done) => {
      reapplyCors(reply);
      done(null, payload);
    });

    const invoke: Omit<RouteOptions, 'url'> = {
      method: INVOKE_METHODS,
      bodyLimit: opts.maxBodyBytes,
      exposeHeadRoute: false,
      // Authentication (API key and/or proxy key) is the service's: it depends on the proxy.
      // Never replayed: every invocation goes to the destination; a proxied PATCH carries any body.
      config: { access: 'public', idempotent: false, mergePatch: false },
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const result = await proxies.invoke({
          method: request.method,
          url: request.url,
          headers: request.headers,
          body: Buffer.isBuffer(request.body) ? request.body : undefined,
          ip: request.ip,
        });
        reply.code(result.status);
        // Coffer's request id stays: it is what the caller quotes when reporting a problem. The
        // destination's (or a response transform's) comes back under a name of its own.
        for (const [name, value] of Object.entries(result.headers)) if (name !== REQUEST_ID) reply.header(name, value);
        const theirs = result.headers[REQUEST_ID];
        if (theirs !== undefined) reply.header(DESTINATION_REQUEST_ID, theirs);
        reply.header(DESTINATION_STATUS, String(result.status));
        return reply.send(result.body);
      },
    };
    scope.route({
      ...invoke,
      url: '/proxy',
      schema: {
        tags,
        summary: 'Invoke a proxy: the request goes to its destination_url (also every path below /proxy)',
        description:
          'The proxy key comes from the `SVC-PROXY-KEY` header or the `svc-proxy-key` query parameter. ' +
          '`/proxy/<path>?<query>` goes to `destination_url` + `/<path>?<query>`. The answer is the destination\'s, ' +
          'with `SVC-PROXY-DESTINATION-STATUS`; errors inside Coffer answer `{"proxy_error": <problem details>}` without it. ' +
          'See docs/proxies.md.',
        response: InvocationResponses,
      },
    });
    scope.route({ ...invoke, url: '/proxy/*', schema: { hide: true } });
  });
}

/**
 * Every failure of an invocation: `{ "proxy_error": <problem details> }`, never the
 * destination-status header. A streamed body that fails before its first byte lands here
 * too, after the destination's headers were set on the reply: they go.
 */
function sendProxyError(proxies: ProxyService, err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const error = proxies.errorOf(err) ?? unexpectedError(err, request.log, 'unhandled error in a proxy invocation');
  for (const name of Object.keys(reply.getHeaders())) if (name !== REQUEST_ID) reply.removeHeader(name);
  if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
  return reply
    .code(error.status)
    .type('application/json; charset=utf-8')
    .send(JSON.stringify({ proxy_error: error.toProblem(request.id) }));
}

function toProxyResponse(p: ProxyView) {
  return {
    id: p.id,
    tenant_id: p.tenant_id,
    name: p.name,
    key: p.key,
    destination_url: p.destination_url,
    require_auth: p.require_auth,
    request_transform: p.request_transform ?? undefined,
    response_transform: p.response_transform ?? undefined,
    application_id: p.application_id ?? undefined,
    configuration: p.configuration ?? undefined,
    created_by: p.created_by ?? undefined,
    created_at: p.created_at.toISOString(),
    modified_by: p.modified_by ?? undefined,
    modified_at: iso(p.modified_at),
  };
}
