import { Type, type Static } from 'typebox';
import { MapOf, Nullable, PROBLEM_ID, RETRY_AFTER, StringMap, Timestamp, Uuid } from '../../http/schemas.ts';
import { OffsetQuery } from '../../http/pagination.ts';

export const RESPONSE_TRANSFORM_TYPES = ['code', 'mask'] as const;
export const MASK_MATCHERS = ['regex', 'chase_stratus_pan'] as const;

const Name = Type.String({ minLength: 1, maxLength: 200 });
export const MAX_URL_LENGTH = 2048;
const DestinationUrl = Type.String({
  minLength: 1,
  maxLength: MAX_URL_LENGTH,
  description: 'Absolute http(s) URL; the path and query of each invocation are appended to it; stored and returned normalised',
});
// The sandbox refuses code longer than this; refusing it here names the field.
const Code = Type.String({ minLength: 1, maxLength: 50_000, description: 'CommonJS: module.exports = async function (req) { … }' });

export const RequestTransformSchema = Type.Object(
  { code: Code },
  { additionalProperties: false, description: 'Runs in the sandbox on the (detokenized) request; returns {body, headers} to forward' },
);

export const ResponseTransformSchema = Type.Object(
  {
    type: Type.Optional(Type.Enum([...RESPONSE_TRANSFORM_TYPES], { description: 'Default code' })),
    code: Type.Optional(Code),
    matcher: Type.Optional(Type.Enum([...MASK_MATCHERS], { description: 'Required when type is mask' })),
    replacement: Type.Optional(Type.String({ maxLength: 8, description: 'Exactly one character; required when type is mask' })),
    expression: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, description: 'JavaScript regular expression with at least one capture group; required when matcher is regex' })),
  },
  { additionalProperties: false },
);

const Configuration = StringMap({ minLength: 1, maxLength: 200 }, Type.String({ maxLength: 10_000 }), {
  maxProperties: 100,
  description: 'String map handed to transforms as req.configuration; stored encrypted',
});
const ApplicationRef = Type.Object({ id: Uuid }, { additionalProperties: false });

export const ProxySchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  key: Type.String({ description: 'The key that invokes the proxy (SVC-PROXY-KEY header or svc-proxy-key query)' }),
  destination_url: Type.String(),
  require_auth: Type.Boolean(),
  request_transform: Type.Optional(RequestTransformSchema),
  response_transform: Type.Optional(ResponseTransformSchema),
  application_id: Type.Optional(Uuid),
  configuration: Type.Optional(MapOf(Type.String())),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

/** Create and update (PUT) take the whole proxy; what is left out takes its default. */
export const ProxyBody = Type.Object(
  {
    name: Name,
    destination_url: DestinationUrl,
    request_transform: Type.Optional(Nullable(RequestTransformSchema)),
    response_transform: Type.Optional(Nullable(ResponseTransformSchema)),
    application: Type.Optional(Nullable(ApplicationRef, { description: 'A public or private application: its principal is the SDK\'s in transforms and detokenizes for anonymous callers' })),
    configuration: Type.Optional(Nullable(Configuration)),
    require_auth: Type.Boolean({ default: true }),
  },
  { additionalProperties: false },
);
export type ProxyInput = Static<typeof ProxyBody>;

/**
 * PATCH: an RFC 7386 merge patch over the same fields. Each value is checked once merged
 * into the current proxy (against ProxyBody), so field errors name the merged document.
 */
export const ProxyPatch = Type.Object(
  {
    name: Type.Optional(Type.Unknown()),
    destination_url: Type.Optional(Type.Unknown()),
    request_transform: Type.Optional(Type.Unknown()),
    response_transform: Type.Optional(Type.Unknown()),
    application: Type.Optional(Type.Unknown()),
    configuration: Type.Optional(Type.Unknown()),
    require_auth: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const ListProxiesQuery = Type.Object({
  id: Type.Array(Uuid, { default: [], maxItems: 100 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Case-insensitive; * matches any run of characters; without *, a substring match' })),
  ...OffsetQuery(),
});

/**
 * What an invocation answers. Its status may be anything the destination chose; failures on
 * Coffer's side are `{"proxy_error": <problem details>}` without SVC-PROXY-DESTINATION-STATUS,
 * which is how a client tells the two apart (docs/proxies.md, Errors).
 */
const DESTINATION_STATUS = {
  'svc-proxy-destination-status': { type: 'integer', description: 'The destination\'s status; absent on proxy_error answers' },
};

const ProxyError = Type.Object(
  { proxy_error: Type.Ref(PROBLEM_ID) },
  { description: 'A failure inside Coffer (never the destination\'s answer)' },
);

// The causes, as docs/proxies.md lists them.
const PROXY_ERRORS: Record<number, string> = {
  400: 'Invalid expression, unknown token, a path with `..`, a bad SVC-PROXY-CONNECTION, expressions for an anonymous proxy without an application',
  401: 'No proxy key; or require_auth and no, an unknown or an expired API key',
  403: 'No token:use; a token the caller may not use; the destination resolves to an internal address',
  404: 'Unknown proxy key, or another tenant\'s',
  408: 'A transform ran past its time limit',
  413: 'The request body is over PROXY_MAX_BODY_BYTES',
  415: 'A malformed Content-Type',
  422: 'A transform threw (or returned something else than {body, headers}); a mask expression ran over its time',
  429: 'Anonymous rate limit; retry after Retry-After',
  502: 'The destination could not be reached or answered something malformed (a status outside 200–599), or its answer could not be read for a response transform',
  504: 'The destination did not answer within PROXY_TIMEOUT_MS',
};

const destinationAnswer = (description: string) =>
  Type.Unsafe<unknown>({ description, headers: DESTINATION_STATUS, content: { '*/*': { schema: {} } } });

export const InvocationResponses = {
  '2xx': destinationAnswer('The destination\'s answer, its status and body as it sent them (after the response transform or mask)'),
  default: destinationAnswer('The destination\'s answer with a status of its own outside 2xx; SVC-PROXY-DESTINATION-STATUS tells it from a proxy_error'),
  ...Object.fromEntries(
    Object.entries(PROXY_ERRORS).map(([status, description]) => [
      status,
      Type.Unsafe<Static<typeof ProxyError>>({
        description,
        ...(status === '429' ? { headers: RETRY_AFTER } : {}),
        content: { 'application/json': { schema: ProxyError } },
      }),
    ]),
  ),
};
