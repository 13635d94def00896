import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { problems } from '../../http/schemas.ts';
import { ListMembersQuery, MemberId, MemberPage } from './schema.ts';
import type { MemberService } from './service.ts';

const tags = ['tenant members'];

export function registerMemberRoutes(app: FastifyInstance, members: MemberService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.get('/tenants/self/members', {
    config: { access: { permissions: ['tenant:member:read'] } },
    schema: { tags, summary: 'List the tenant\'s members (pages of at most 50)', querystring: ListMembersQuery, response: { 200: MemberPage, ...problems() } },
  }, async (request) => members.list(principalOf(request), request.query));

  r.delete('/tenants/self/members/:id', {
    config: { access: { permissions: ['tenant:member:delete'] } },
    schema: {
      tags,
      summary: 'Remove a member: all its access to the tenant ends at once, its signed-in sessions included (the OWNER cannot be removed: 422)',
      params: MemberId,
      response: { 204: Type.Null(), ...problems(404, 422) },
    },
  }, async (request, reply) => {
    await members.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}
