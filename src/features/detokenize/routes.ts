import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { ApiError } from '../../http/errors.ts';
import { BODY, problems } from '../../http/schemas.ts';
import type { DetokenizeService } from './service.ts';

export function registerDetokenizeRoutes(app: FastifyInstance, detokenize: DetokenizeService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/detokenize', {
    // Never replayed: a stored reply would hand out token data again without a permission
    // check or audit event, and keep it outside the vault for the key's lifetime. A
    // detokenization changes nothing, so running it again is what a retry needs anyway.
    config: { access: { permissions: ['token:read'] }, idempotent: false },
    schema: {
      tags: ['detokenize'],
      summary: 'Replace detokenization expressions in any JSON with token data',
      body: Type.Unknown({ description: 'Any JSON; strings may hold {{ <token_id> | filters }} or {{ token: <token_id> }}' }),
      response: { 200: Type.Unknown(), ...problems(...BODY) },
    },
  }, async (request, reply) => {
    // An empty body parses as "no body" (see http/server.ts); there is nothing to detokenize.
    if (request.body === undefined) throw ApiError.field('body', 'is required: any JSON whose strings may hold detokenization expressions');
    const result = await detokenize.detokenize(principalOf(request), request.body, { boundValues: true });
    // Serialized here: Fastify would send a bare string result as text/plain, not as a JSON string.
    return reply.type('application/json; charset=utf-8').send(JSON.stringify(result));
  });
}
