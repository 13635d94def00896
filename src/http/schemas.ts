import { Type, type TSchema, type Static } from 'typebox';

/** Schemas shared by every feature: ids, timestamps, problem details. */
export const Uuid = Type.String({ format: 'uuid', description: 'UUID' });
// RFC 3339 admits leap seconds (23:59:60), which no JavaScript Date can hold: refused at the door.
export const Timestamp = Type.String({ format: 'date-time', pattern: '^(?!.*T\\d{2}:\\d{2}:60)', description: 'ISO 8601 timestamp' });

/** `T | null` as one JSON Schema type list, so validation errors stay readable. */
export function Nullable<T extends TSchema>(schema: T, extra: Record<string, unknown> = {}) {
  const s = schema as unknown as { type?: string };
  return Type.Unsafe<Static<T> | null>({ ...schema, ...extra, type: [s.type ?? 'string', 'null'] });
}

export const IdParams = Type.Object({ id: Uuid });

/**
 * A map of strings to `value`, its keys `key.minLength` to `key.maxLength` characters. TypeBox
 * writes a record's key schema as a catch-all pattern, which checks nothing: the key limits
 * go in `propertyNames` too, where validation sees them (errors name the key, see errors.ts).
 */
export function StringMap<V extends TSchema>(key: { minLength?: number; maxLength: number }, value: V, options: Record<string, unknown> = {}) {
  return Type.Record(Type.String(key), value, { ...options, propertyNames: { type: 'string', ...key } });
}

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    errors: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()))),
    request_id: Type.String(),
  },
  { description: 'RFC 9457 problem details' },
);

/** Response entries for the errors a route can return; every authenticated route can 400/401/403. */
export function problems(...statuses: number[]): Record<number, typeof Problem> {
  const out: Record<number, typeof Problem> = {};
  for (const s of [400, 401, 403, ...statuses]) out[s] = Problem;
  return out;
}

export function iso(date: Date | null | undefined): string | undefined {
  return date ? date.toISOString() : undefined;
}
