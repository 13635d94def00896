import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { principalOf } from '../../http/auth.ts';
import { OffsetPage } from '../../http/pagination.ts';
import { IdParams, iso, problems, WRITE } from '../../http/schemas.ts';
import { ListDeliveriesQuery, ListWebhooksQuery, WebhookBody, WebhookDeliverySchema, WebhookSchema } from './schema.ts';
import type { WebhookService, WebhookView } from './service.ts';
import type { WebhookDelivery } from './store.ts';

const tags = ['webhooks'];

export function registerWebhookRoutes(app: FastifyInstance, webhooks: WebhookService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/webhooks', {
    config: { access: { permissions: ['webhook:create'] } },
    schema: { tags, summary: 'Create a webhook; the response carries its signing secret, shown only here', body: WebhookBody, response: { 201: WebhookSchema, ...problems(...WRITE) } },
  }, async (request, reply) => reply.code(201).send(toWebhookResponse(await webhooks.create(principalOf(request), request.body))));

  r.get('/webhooks', {
    config: { access: { permissions: ['webhook:read'] } },
    schema: { tags, summary: 'List webhooks', querystring: ListWebhooksQuery, response: { 200: OffsetPage(WebhookSchema), ...problems() } },
  }, async (request) => {
    const page = await webhooks.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(toWebhookResponse) };
  });

  r.get('/webhooks/event-types', {
    config: { access: { permissions: ['webhook:read'] } },
    schema: { tags, summary: 'The event types webhooks can subscribe to', response: { 200: Type.Array(Type.String()), ...problems() } },
  }, async () => webhooks.eventTypes());

  r.get('/webhooks/:id', {
    config: { access: { permissions: ['webhook:read'] } },
    schema: { tags, summary: 'Get a webhook', params: IdParams, response: { 200: WebhookSchema, ...problems(404) } },
  }, async (request) => toWebhookResponse(await webhooks.get(principalOf(request), request.params.id)));

  r.put('/webhooks/:id', {
    config: { access: { permissions: ['webhook:update'] } },
    schema: { tags, summary: 'Replace a webhook (its secret is kept)', params: IdParams, body: WebhookBody, response: { 200: WebhookSchema, ...problems(404, ...WRITE) } },
  }, async (request) => toWebhookResponse(await webhooks.update(principalOf(request), request.params.id, request.body)));

  r.delete('/webhooks/:id', {
    config: { access: { permissions: ['webhook:delete'] } },
    schema: { tags, summary: 'Delete a webhook; pending deliveries are dropped', params: IdParams, response: { 204: Type.Null(), ...problems(404) } },
  }, async (request, reply) => {
    await webhooks.remove(principalOf(request), request.params.id);
    return reply.code(204).send(null);
  });

  r.get('/webhooks/:id/deliveries', {
    config: { access: { permissions: ['webhook:read'] } },
    schema: {
      tags,
      summary: 'Delivery attempts of a webhook, newest first',
      params: IdParams,
      querystring: ListDeliveriesQuery,
      response: { 200: OffsetPage(WebhookDeliverySchema), ...problems(404) },
    },
  }, async (request) => {
    const page = await webhooks.listDeliveries(principalOf(request), request.params.id, request.query);
    return { pagination: page.pagination, data: page.data.map(toDeliveryResponse) };
  });
}

function toWebhookResponse(w: WebhookView) {
  return {
    id: w.id,
    tenant_id: w.tenant_id,
    name: w.name,
    url: w.url,
    notify_email: w.notify_email ?? undefined,
    events: w.events,
    status: w.status,
    ...(w.secret !== undefined ? { secret: w.secret } : {}),
    created_by: w.created_by ?? undefined,
    created_at: w.created_at.toISOString(),
    modified_by: w.modified_by ?? undefined,
    modified_at: iso(w.modified_at),
  };
}

function toDeliveryResponse(d: WebhookDelivery) {
  return {
    id: d.id,
    webhook_id: d.webhook_id,
    event_id: d.event_id,
    event_type: d.event_type,
    attempt: d.attempt,
    status: d.succeeded ? 'succeeded' as const : 'failed' as const,
    response_status: d.status_code ?? undefined,
    error: d.error ?? undefined,
    duration_ms: d.duration_ms,
    created_at: d.created_at.toISOString(),
  };
}
