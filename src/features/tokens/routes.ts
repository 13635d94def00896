import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { CursorPage, OffsetPage } from '../../http/pagination.ts';
import { problem, problems, RETRY_AFTER, WRITE } from '../../http/schemas.ts';
import { CreateTokenBody, ListTokensQuery, ListTokensV2Query, SearchTokensBody, TokenId, TokenSchema, UpdateTokenBody } from './schema.ts';
import { presentToken } from './present.ts';
import type { TokenService } from './service.ts';

const tags = ['tokens'];
const Params = Type.Object({ id: TokenId });
const GetTokenQuery = Type.Object({
  reveal: Type.Optional(Type.Boolean({ description: 'For a signed-in OWNER or ADMIN member: show the plaintext instead of the mask (audited as a reveal). API keys see what their rules give.' })),
});
/** Token creation by public and session keys over PUBLIC_TOKEN_CREATE_* (docs/vault.md). */
const CREATE_RATE = { 429: problem(429, undefined, RETRY_AFTER) };

export function registerTokenRoutes(app: FastifyInstance, tokens: TokenService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/tokens', {
    config: { access: { permissions: ['token:create'] } },
    schema: { tags, summary: 'Create a token', body: CreateTokenBody, response: { 201: TokenSchema, ...problems(...WRITE), ...CREATE_RATE } },
  }, async (request, reply) => reply.code(201).send(presentToken(await tokens.create(principalOf(request), request.body, { ip: request.ip }))));

  r.post('/tokenize', {
    config: { access: { permissions: ['token:create'] } },
    schema: {
      tags,
      summary: 'Tokenize every token request in a JSON document (all or nothing)',
      body: Type.Unknown({ description: 'Any JSON whose leaves {type, data, …} are token requests' }),
      response: { 201: Type.Unknown(), ...problems(...WRITE), ...CREATE_RATE },
    },
  }, async (request, reply) => {
    return reply.code(201).send(await tokens.tokenize(principalOf(request), request.body, presentToken, { ip: request.ip }));
  });

  r.get('/tokens', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'List tokens (offset pagination)', querystring: ListTokensQuery, response: { 200: OffsetPage(TokenSchema), ...problems() } },
  }, async (request) => {
    const page = await tokens.list(principalOf(request), request.query as never);
    return { pagination: page.pagination, data: page.data.map(presentToken) };
  });

  r.get('/v2/tokens', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'List tokens (cursor pagination)', querystring: ListTokensV2Query, response: { 200: CursorPage(TokenSchema), ...problems() } },
  }, async (request) => {
    const page = await tokens.listV2(principalOf(request), request.query as never);
    return { pagination: page.pagination, data: page.data.map(presentToken) };
  });

  r.post('/v2/tokens/search', {
    // Never replayed, as POST /detokenize: a search changes nothing, and a stored reply would
    // show token data again without the rules of the moment or an audit entry.
    config: { access: { permissions: ['token:search'] }, idempotent: false },
    schema: { tags, summary: 'Search tokens: field:value terms joined by AND/OR', body: SearchTokensBody, response: { 200: CursorPage(TokenSchema), ...problems(...WRITE) } },
  }, async (request) => {
    const page = await tokens.search(principalOf(request), request.body);
    return { pagination: page.pagination, data: page.data.map(presentToken) };
  });

  r.get('/tokens/:id', {
    config: { access: { permissions: ['token:read'] } },
    schema: { tags, summary: 'Get a token', params: Params, querystring: GetTokenQuery, response: { 200: TokenSchema, ...problems(404) } },
  }, async (request) => presentToken(await tokens.get(principalOf(request), request.params.id, { reveal: request.query.reveal })));

  r.patch('/tokens/:id', {
    config: { access: { permissions: ['token:update'] } },
    schema: {
      tags,
      summary: 'Update a token (application/merge-patch+json)',
      params: Params,
      body: UpdateTokenBody,
      response: { 200: TokenSchema, ...problems(404, ...WRITE) },
    },
  }, async (request) => presentToken(await tokens.update(principalOf(request), request.params.id, request.body as never)));

  r.delete('/tokens/:id', {
    config: { access: { permissions: ['token:delete'] } },
    schema: { tags, summary: 'Delete a token', params: Params, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await tokens.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}
