import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { iso, problems, Timestamp, Uuid } from '../../http/schemas.ts';
import type { TenantQuotas } from './quotas.ts';
import type { TenantService } from './service.ts';

const TenantSchema = Type.Object({
  id: Uuid,
  name: Type.String(),
  owner_id: Type.Optional(Uuid),
  quotas: Type.Object({
    detokenize_limit: Type.Integer({ description: 'Detokenization expressions one request may hold (the Detokenize Limit)' }),
    token_intent_ttl_hours: Type.Integer({ description: 'Hours a token intent lives before it expires' }),
  }),
  created_at: Timestamp,
  modified_at: Type.Optional(Timestamp),
});

export function registerTenantRoutes(app: FastifyInstance, tenants: TenantService, quotas: TenantQuotas): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/tenants/self', {
    config: { access: { permissions: ['tenant:read'] } },
    schema: { tags: ['tenants'], summary: 'Get the tenant of the calling key', response: { 200: TenantSchema, ...problems(404) } },
  }, async (request) => {
    const t = await tenants.getSelf(principalOf(request));
    const q = await quotas.of(t.id);
    return { id: t.id, name: t.name, owner_id: t.owner_id ?? undefined, quotas: { detokenize_limit: q.detokenize_limit, token_intent_ttl_hours: q.token_intent_ttl_hours }, created_at: t.created_at.toISOString(), modified_at: iso(t.modified_at) };
  });
}
