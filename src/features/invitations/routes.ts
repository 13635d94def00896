import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { problems, WRITE, IDEMPOTENT } from '../../http/schemas.ts';
import { CreateInvitationBody, InvitationId, InvitationPage, InvitationSchema, ListInvitationsQuery } from './schema.ts';
import type { InvitationService, InvitationView } from './service.ts';

const tags = ['tenant invitations'];

export function presentInvitation(v: InvitationView) {
  const r = v.row;
  return {
    id: r.id,
    tenant_id: r.tenant_id,
    email: r.email,
    role: r.role,
    status: v.status,
    expires_at: r.expires_at.toISOString(),
    email_status: v.mail?.status ?? 'sent',
    ...(r.accepted_at ? { accepted_at: r.accepted_at.toISOString() } : {}),
    ...(r.member_id ? { member_id: r.member_id } : {}),
    ...(r.created_by ? { created_by: r.created_by } : {}),
    created_at: r.created_at.toISOString(),
    ...(r.modified_by ? { modified_by: r.modified_by } : {}),
    ...(r.modified_at ? { modified_at: r.modified_at.toISOString() } : {}),
  };
}

export function registerInvitationRoutes(app: FastifyInstance, invitations: InvitationService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/tenants/self/invitations', {
    config: { access: { permissions: ['tenant:invitation:create'] } },
    schema: {
      tags,
      summary: 'Invite someone by e-mail: the e-mail carries a link, valid 72 hours, that makes them a member with `role`',
      description: '409 when the address has a pending invitation already, or is a member\'s.',
      body: CreateInvitationBody,
      response: { 201: InvitationSchema, ...problems(...WRITE) },
    },
  }, async (request, reply) => reply.code(201).send(presentInvitation(await invitations.create(principalOf(request), request.body))));

  r.post('/tenants/self/invitations/:id/resend', {
    config: { access: { permissions: ['tenant:invitation:create', 'tenant:invitation:update'] } },
    schema: {
      tags,
      summary: 'Send the invitation again with a new link (earlier links stop working), PENDING for another 72 hours',
      params: InvitationId,
      response: { 200: InvitationSchema, ...problems(404, ...IDEMPOTENT) },
    },
  }, async (request) => presentInvitation(await invitations.resend(principalOf(request), request.params.id)));

  r.get('/tenants/self/invitations', {
    config: { access: { permissions: ['tenant:invitation:read'] } },
    schema: { tags, summary: 'List the tenant\'s invitations (accepted ones included)', querystring: ListInvitationsQuery, response: { 200: InvitationPage, ...problems() } },
  }, async (request) => {
    const page = await invitations.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(presentInvitation) };
  });

  r.get('/tenants/self/invitations/:id', {
    config: { access: { permissions: ['tenant:invitation:read'] } },
    schema: { tags, summary: 'Get an invitation', params: InvitationId, response: { 200: InvitationSchema, ...problems(404) } },
  }, async (request) => presentInvitation(await invitations.get(principalOf(request), request.params.id)));

  r.delete('/tenants/self/invitations/:id', {
    config: { access: { permissions: ['tenant:invitation:delete'] } },
    schema: { tags, summary: 'Delete an invitation: its links stop working', params: InvitationId, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await invitations.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });
}
