import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';
import { OffsetQuery } from '../../http/pagination.ts';

/** The event catalogue webhooks may subscribe to; `*` subscribes to every type, present and future. */
export const WEBHOOK_EVENT_TYPES = [
  'reactor.invoked',
  'reactor.completed',
  'reactor.failed',
  'token.created',
  'token.updated',
  'token.deleted',
  'token.expired',
  'token-intent.created',
  'token-intent.deleted',
  'token-intent.converted',
  '3ds.session.created',
  '3ds.session.method-completed',
  '3ds.session.authenticated',
  '3ds.session.challenge-completed',
  '3ds.session.decoupled-challenge-notification',
  '3ds.session.challenge-result-retrieved',
  'transaction.created',
  'transaction.authorized',
  'transaction.captured',
  'transaction.voided',
  'transaction.declined',
  'transaction.failed',
  'refund.created',
  'refund.succeeded',
  'refund.failed',
  'tenant.invitation.created',
  'tenant.invitation.resent',
  'tenant.invitation.deleted',
  'tenant.invitation.accepted',
  'tenant.member.created',
  'tenant.member.deleted',
] as const;
export const ALL_EVENTS = '*';

export const WEBHOOK_STATUSES = ['enabled', 'disabled'] as const;

const Name = Type.String({ minLength: 1, maxLength: 200 });
export const MAX_URL_LENGTH = 2048;
const Url = Type.String({ minLength: 1, maxLength: MAX_URL_LENGTH, description: 'Absolute http(s) URL the events are POSTed to; stored and returned normalised' });
// RFC 5321 caps an address at 254 characters; ajv-formats' `email` is an RFC 5322-style check.
const Email = Type.String({ format: 'email', maxLength: 254 });
const Events = Type.Array(Type.Enum([...WEBHOOK_EVENT_TYPES, ALL_EVENTS]), {
  minItems: 1,
  maxItems: WEBHOOK_EVENT_TYPES.length + 1,
  uniqueItems: true,
  description: 'Event types to deliver; "*" for all',
});

export const WebhookSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  url: Type.String(),
  notify_email: Type.Optional(Type.String()),
  events: Type.Array(Type.String()),
  status: Type.Enum([...WEBHOOK_STATUSES]),
  secret: Type.Optional(Type.String({ description: 'The signing secret (whsec_…); only in the create response' })),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

/** Create and update take the same body: an update replaces the whole webhook. */
export const WebhookBody = Type.Object({
  name: Name,
  url: Url,
  notify_email: Type.Optional(Nullable(Email)),
  events: Events,
  status: Type.Enum([...WEBHOOK_STATUSES], { default: 'enabled' }),
}, { additionalProperties: false });

export const WebhookDeliverySchema = Type.Object({
  id: Uuid,
  webhook_id: Uuid,
  event_id: Uuid,
  event_type: Type.String(),
  attempt: Type.Integer({ description: 'From 1; the same event is retried on WEBHOOK_RETRY_SCHEDULE until delivered or dead-lettered' }),
  status: Type.Enum(['succeeded', 'failed']),
  response_status: Type.Optional(Type.Integer({ description: 'The HTTP status the endpoint answered with' })),
  error: Type.Optional(Type.String({ description: 'Why no HTTP answer came: timeout, connect_failed, blocked_address, …' })),
  duration_ms: Type.Integer(),
  created_at: Timestamp,
});

export const ListWebhooksQuery = Type.Object({ ...OffsetQuery() });
export const ListDeliveriesQuery = Type.Object({ ...OffsetQuery() });
