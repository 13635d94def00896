import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { problems, WRITE } from '../../http/schemas.ts';
import { CreateTokenIntentBody, TokenIntentId, TokenIntentSchema } from './schema.ts';
import type { TokenIntentService } from './service.ts';
import { presentTokenIntent } from './present.ts';

const tags = ['token intents'];

export function registerTokenIntentRoutes(app: FastifyInstance, intents: TokenIntentService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/token-intents', {
    config: { access: { permissions: ['token-intent:create'] } },
    schema: {
      tags,
      summary: 'Create a token intent: data held for a while (24 h by default) until it becomes a token; never returned',
      body: CreateTokenIntentBody,
      response: { 201: TokenIntentSchema, ...problems(...WRITE) },
    },
  }, async (request, reply) => reply.code(201).send(presentTokenIntent(await intents.create(principalOf(request), request.body))));

  r.get('/token-intents/:id', {
    config: { access: { permissions: ['token-intent:read'] } },
    schema: { tags, summary: 'Get a token intent (its details, never its data)', params: TokenIntentId, response: { 200: TokenIntentSchema, ...problems(404) } },
  }, async (request) => presentTokenIntent(await intents.get(principalOf(request), request.params.id)));

  r.delete('/token-intents/:id', {
    config: { access: { permissions: ['token-intent:delete'] } },
    schema: { tags, summary: 'Delete a token intent', params: TokenIntentId, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await intents.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}
