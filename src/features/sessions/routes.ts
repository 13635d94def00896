import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { BODY, problems, WRITE } from '../../http/schemas.ts';
import { AuthorizeSessionBody, SessionCreated } from './schema.ts';
import type { SessionService } from './service.ts';

const tags = ['sessions'];

export function registerSessionRoutes(app: FastifyInstance, sessions: SessionService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  // SVC-IDEMPOTENCY-KEY is ignored here: a public key is known to every browser that uses it and
  // the request has no body, so a stored reply would hand this session's key and nonce to anyone
  // who guessed the idempotency key. A retry simply makes another session, which expires unused.
  r.post('/sessions', {
    config: { access: { permissions: [], types: ['public'], sessions: false }, idempotent: false },
    schema: { tags, summary: 'Create a session (with a public application key)', response: { 201: SessionCreated, ...problems(...BODY) } },
  }, async (request, reply) => reply.code(201).send(await sessions.create(principalOf(request))));

  r.post('/sessions/authorize', {
    config: { access: { permissions: ['session:authorize'], types: ['private'], sessions: false } },
    schema: { tags, summary: 'Authorize a session (with a private application key)', body: AuthorizeSessionBody, response: { 204: Type.Null(), ...problems(404, ...WRITE) } },
  }, async (request, reply) => {
    await sessions.authorize(principalOf(request), request.body);
    return reply.code(204).send(null);
  });
}
