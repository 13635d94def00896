import { Type } from 'typebox';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';
import { CursorQuery } from '../../http/pagination.ts';

export const LogEvent = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  actor_id: Nullable(Uuid),
  actor_type: Nullable(Type.String()),
  entity_type: Type.String(),
  entity_id: Nullable(Type.String()),
  operation: Type.String(),
  message: Type.String(),
  created_at: Timestamp,
});

export const LogQuery = Type.Object({
  ...CursorQuery,
  entity_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  entity_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  start_date: Type.Optional(Type.String({ format: 'date-time' })),
  end_date: Type.Optional(Type.String({ format: 'date-time' })),
});

export const ENTITY_TYPES = ['application', 'application_key', 'proxy', 'session', 'tenant', 'tenant_member', 'tenant_invitation', 'token', 'token-intent', 'reactor', 'webhook', '3ds_session'] as const;
