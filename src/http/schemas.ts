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
 * An object of any string keys, each holding `value`. Not TypeBox's Record: that writes the key
 * as the pattern `^.*$`, which no key holding a line break matches, so ajv left such a key's
 * value unchecked and fast-json-stringify dropped the entry from responses.
 */
export function MapOf<V extends TSchema>(value: V, options: Record<string, unknown> = {}) {
  return Type.Unsafe<Record<string, Static<V>>>({ ...options, type: 'object', additionalProperties: value });
}

/**
 * A map of strings to `value`, its keys `key.minLength` to `key.maxLength` characters, checked
 * as `propertyNames` (errors name the key, see errors.ts).
 */
export function StringMap<V extends TSchema>(key: { minLength?: number; maxLength: number }, value: V, options: Record<string, unknown> = {}) {
  return MapOf(value, { ...options, propertyNames: { type: 'string', ...key } });
}

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    errors: Type.Optional(MapOf(Type.Array(Type.String()))),
    // Failed reactor runs and proxy transforms: what the code's error class carried (docs/reactors.md).
    data: Type.Optional(Type.Unknown({ description: 'What the error thrown by reactor or transform code carried' })),
    request_id: Type.String(),
  },
  { description: 'RFC 9457 problem details' },
);

/**
 * Problem registered once under this id (http/openapi.ts) and referred to from every error
 * response: the document then names one Problem type for client generators instead of
 * repeating it a few hundred times.
 */
export const PROBLEM_ID = 'Problem';
export const ProblemComponent = { ...Problem, $id: PROBLEM_ID };

export const RETRY_AFTER = { 'retry-after': { type: 'integer', description: 'Seconds to wait before retrying' } };

/**
 * One error response: problem details as errors.ts sends them, `application/problem+json`
 * (not the document's default application/json). `schema` is Problem itself for routes that
 * must also work on a server without the OpenAPI registration.
 */
export function problem(status: number, schema: TSchema = Type.Ref(PROBLEM_ID), headers?: Record<string, unknown>) {
  return Type.Unsafe<Static<typeof Problem>>({
    description: ERROR_DESCRIPTIONS[status] ?? 'Problem details',
    ...(headers ? { headers } : {}),
    content: { 'application/problem+json': { schema } },
  });
}

/** What each error status means across Coffer; the route's own causes are in its docs. */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'The request is invalid; `errors` names the fields at fault (path, query, headers or body) in JavaScript notation, a key that is not a plain name quoted: `body.rules[0].priority`, `body.metadata["order.id"]`',
  401: 'No API key, or an unknown or expired one',
  403: 'The API key may not do this (permission, application type, session key, or a container rule)',
  404: 'Not found in the caller\'s tenant',
  408: 'The code ran past its time limit',
  409: 'Conflict: the resource exists already, or a request with this SVC-IDEMPOTENCY-KEY is still running',
  413: 'The request body (or the data it stands for) is too large',
  415: 'The Content-Type is not one this operation takes',
  422: 'The request is well-formed but cannot be carried out (also: this SVC-IDEMPOTENCY-KEY was used for another request)',
  424: 'A service the operation depends on failed (3DS: the Directory Server or the 3DS Server); the body says which, and whether to retry with a new session',
  429: 'Too many requests (or runs) at once; retry shortly',
  502: 'A provider Coffer calls for the answer (bank account verification) failed or gave no usable answer; retry later',
  503: 'The database is not available right now; retry shortly',
};

/**
 * Statuses a route may meet besides its own, by what it takes. Every authenticated route can
 * 400/401/403, and 503 while the database is out of reach (errors.ts errorHandler).
 */
export const AUTHENTICATED = [400, 401, 403, 503];
/** A request body can be too large (413) or of a Content-Type the route does not parse (415). */
export const BODY = [413, 415];
/**
 * POST, PUT and PATCH run under SVC-IDEMPOTENCY-KEY (http/idempotency.ts) unless the route opts
 * out: 409 while the key's first request is still running, 422 when the key was used for another request.
 */
export const IDEMPOTENT = [409, 422];
/** A POST, PUT or PATCH with a body, under SVC-IDEMPOTENCY-KEY. */
export const WRITE = [...BODY, ...IDEMPOTENT];

/** Response entries for the errors an authenticated route can return: AUTHENTICATED plus `statuses`. */
export function problems(...statuses: number[]): Record<number, ReturnType<typeof problem>> {
  const out: Record<number, ReturnType<typeof problem>> = {};
  // errorHandler's 503 (the database out of reach) carries Retry-After.
  for (const s of [...AUTHENTICATED, ...statuses]) out[s] = problem(s, undefined, s === 503 ? RETRY_AFTER : undefined);
  return out;
}

export function iso(date: Date | null | undefined): string | undefined {
  return date ? date.toISOString() : undefined;
}
