import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { CursorPage, OffsetPage } from '../../http/pagination.ts';
import { iso, problems } from '../../http/schemas.ts';
import { CreateTokenBody, ListTokensQuery, ListTokensV2Query, SearchTokensBody, TokenId, TokenSchema, UpdateTokenBody } from './schema.ts';
import type { BankView, CardView } from '../../vault/token-types.ts';
import type { TokenService, TokenView } from './service.ts';

const tags = ['tokens'];
const Params = Type.Object({ id: TokenId });

export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/tokens', {
    config: { access: { permissions: ['token:create'] } },
    schema: { tags, summary: 'Create a token', body: CreateTokenBody, response: { 201: TokenSchema, ...problems(409) } },
  }, async (request, reply) => reply.code(201).send(toTokenResponse(await tokens.create(principalOf(request), request.body))));

  r.post('/tokenize', {
    config: { access: { permissions: ['token:create'] } },
    schema: {
      tags,
      summary: 'Tokenize every token request in a JSON document (all or nothing)',
      body: Type.Unknown({ description: 'Any JSON whose leaves {type, data, …} are token requests' }),
      response: { 201: Type.Unknown(), ...problems(409) },
    },
  }, async (request, reply) => {
    return reply.code(201).send(await tokens.tokenize(principalOf(request), request.body, toTokenResponse));
  });

  r.get('/tokens', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'List tokens (offset pagination)', querystring: ListTokensQuery, response: { 200: OffsetPage(TokenSchema), ...problems() } },
  }, async (request) => {
    const page = await tokens.list(principalOf(request), request.query as never);
    return { pagination: page.pagination, data: page.data.map(toTokenResponse) };
  });

  r.get('/v2/tokens', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'List tokens (cursor pagination)', querystring: ListTokensV2Query, response: { 200: CursorPage(TokenSchema), ...problems() } },
  }, async (request) => {
    const page = await tokens.listV2(principalOf(request), request.query as never);
    return { pagination: page.pagination, data: page.data.map(toTokenResponse) };
  });

  r.post('/v2/tokens/search', {
    config: { access: { permissions: ['token:search'] } },
    schema: { tags, summary: 'Search tokens: field:value terms joined by AND/OR', body: SearchTokensBody, response: { 200: CursorPage(TokenSchema), ...problems() } },
  }, async (request) => {
    const page = await tokens.search(principalOf(request), request.body);
    return { pagination: page.pagination, data: page.data.map(toTokenResponse) };
  });

  r.get('/tokens/:id', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'Get a token', params: Params, response: { 200: TokenSchema, ...problems(404) } },
  }, async (request) => toTokenResponse(await tokens.get(principalOf(request), request.params.id)));

  r.patch('/tokens/:id', {
    config: { access: { permissions: ['token:update'] } },
    schema: {
      tags,
      summary: 'Update a token (application/merge-patch+json)',
      params: Params,
      body: UpdateTokenBody,
      response: { 200: TokenSchema, ...problems(404, 415) },
    },
  }, async (request) => toTokenResponse(await tokens.update(principalOf(request), request.params.id, request.body as never)));

  r.delete('/tokens/:id', {
    config: { access: { permissions: ['token:delete'] } },
    schema: { tags, summary: 'Delete a token', params: Params, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await tokens.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}

/** The response body of a token, field by field; `data` only when the transform shows it. */
export function toTokenResponse(v: TokenView) {
  const t = v.row;
  const views = (t.views ?? {}) as { card?: CardView; bank?: BankView };
  return {
    id: t.id,
    type: t.type,
    tenant_id: t.tenant_id,
    ...(v.data !== undefined ? { data: v.data } : {}),
    containers: t.containers,
    metadata: t.metadata,
    ...(t.mask !== null ? { mask: JSON.parse(t.mask) } : {}),
    fingerprint: t.fingerprint ?? undefined,
    fingerprint_expression: t.fingerprint_expression ?? undefined,
    search_indexes: t.search_indexes,
    deduplicate_token: t.deduplicate_token,
    ...(views.card ? { card: views.card } : {}),
    ...(views.bank ? { bank: views.bank } : {}),
    expires_at: iso(t.expires_at),
    created_by: t.created_by ?? undefined,
    created_at: t.created_at.toISOString(),
    modified_by: t.modified_by ?? undefined,
    modified_at: iso(t.modified_at),
  };
}
