import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { problems } from '../../http/schemas.ts';
import type { DetokenizeService } from './service.ts';

export function registerDetokenizeRoutes(app: FastifyInstance, detokenize: DetokenizeService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/detokenize', {
    config: { access: { permissions: ['token:read'] } },
    schema: {
      tags: ['detokenize'],
      summary: 'Replace detokenization expressions in any JSON with token data',
      body: Type.Unknown({ description: 'Any JSON; strings may hold {{ <token_id> | filters }} or {{ token: <token_id> }}' }),
      response: { 200: Type.Unknown(), ...problems() },
    },
  }, async (request) => detokenize.detokenize(principalOf(request), request.body));
}
