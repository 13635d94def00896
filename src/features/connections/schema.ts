import { Type } from 'typebox';
import { OffsetQuery } from '../../http/pagination.ts';
import { Nullable, Timestamp, Uuid } from '../../http/schemas.ts';
import { PROCESSOR_NAMES } from '../../processors/index.ts';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Settings = Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), {
  description: 'The processor\'s settings (docs/orchestration.md lists each processor\'s), merged over its defaults',
  maxProperties: 50,
});
const Credentials = Type.Record(Type.String({ maxLength: 100 }), Type.String({ maxLength: 4096 }), {
  description: 'The processor\'s secrets (stripe: secret_key). Write-only: encrypted at rest, never returned or logged',
  maxProperties: 20,
});

export const CreateConnectionBody = Type.Object({
  name: Name,
  processor: Type.Enum(PROCESSOR_NAMES),
  settings: Type.Optional(Settings),
  credentials: Type.Optional(Credentials),
}, { additionalProperties: false });

export const PatchConnectionBody = Type.Object({
  name: Type.Optional(Name),
  settings: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Type.Unknown(), { maxProperties: 50, description: 'Merged over the current settings (a null removes one)' })),
  credentials: Type.Optional(Credentials),
}, { additionalProperties: false });

export const ListConnectionsQuery = Type.Object({ ...OffsetQuery() });

export const ConnectionSchema = Type.Object({
  type: Type.Literal('connection'),
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  processor: Type.String(),
  settings: Type.Record(Type.String(), Type.Unknown(), { description: 'Every setting, defaults included' }),
  credentials: Type.Array(Type.String(), { description: 'The names of the credentials it holds; their values are never returned' }),
  created_by: Nullable(Uuid),
  created_at: Timestamp,
  modified_by: Nullable(Uuid),
  modified_at: Timestamp,
});

export type CreateConnectionInput = {
  name: string;
  processor: string;
  settings?: Record<string, unknown>;
  credentials?: Record<string, string>;
};
export type PatchConnectionInput = Partial<CreateConnectionInput>;
