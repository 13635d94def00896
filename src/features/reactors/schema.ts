import { Type } from 'typebox';
import { MapOf, Nullable, StringMap, Timestamp, Uuid } from '../../http/schemas.ts';
import { OffsetQuery } from '../../http/pagination.ts';

const Name = Type.String({ minLength: 1, maxLength: 200 });
const Code = Type.String({ minLength: 1, maxLength: 50_000 });
const Configuration = StringMap({ minLength: 1, maxLength: 200 }, Type.String({ maxLength: 10_000 }), { maxProperties: 100 });
const ApplicationRef = Type.Object({ id: Uuid }, { additionalProperties: false });

export const ReactorSchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  name: Type.String(),
  code: Type.String(),
  configuration: MapOf(Type.String()),
  application: Type.Optional(Type.Object({ id: Uuid, name: Type.String(), type: Type.String() })),
  created_by: Type.Optional(Uuid),
  created_at: Timestamp,
  modified_by: Type.Optional(Uuid),
  modified_at: Type.Optional(Timestamp),
});

// Unknown members are refused, as in PATCH and the proxies' bodies: a misspelt field (the
// proxies' `application_id`, say) would otherwise be dropped without a word, leaving a reactor
// with no application, or a run with no args.
export const ReactorBody = Type.Object(
  {
    name: Name,
    code: Code,
    configuration: Configuration,
    application: Type.Optional(Nullable(ApplicationRef, { type: ['object', 'null'] })),
  },
  { additionalProperties: false },
);

/**
 * PATCH: an RFC 7386 merge patch over the same fields. `configuration` merges key by key
 * (null removes a key), so values are only checked once merged into the current reactor,
 * against ReactorBody: field errors then name the merged document, as for PUT.
 */
export const ReactorPatch = Type.Object(
  {
    name: Type.Optional(Type.Unknown()),
    code: Type.Optional(Type.Unknown()),
    configuration: Type.Optional(Type.Unknown()),
    application: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const ListReactorsQuery = Type.Object({
  id: Type.Array(Uuid, { default: [], maxItems: 100 }),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Wildcard search: * matches any run of characters; without *, a substring match' })),
  ...OffsetQuery(),
});

/** Also once normalised (the service checks that). */
export const MAX_CALLBACK_URL_LENGTH = 2000;

/** The spec's `args`: an object (its values any JSON) or null, the default. */
const Args = Nullable(Type.Object({}, { description: 'Arguments; their strings may hold detokenization expressions {{ <token_id> }}' }), { type: ['object', 'null'] });

export const ReactBody = Type.Object(
  {
    args: Type.Optional(Args),
    callback_url: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: MAX_CALLBACK_URL_LENGTH }), { deprecated: true })),
  },
  { additionalProperties: false },
);

export const ReactAsyncBody = Type.Object({ args: Type.Optional(Args) }, { additionalProperties: false });

export const ReactorResponse = Type.Object({
  tokens: Type.Optional(Type.Unknown()),
  raw: Type.Optional(Type.Unknown()),
  console: Type.Optional(Type.Array(Type.String(), {
    description: 'Only for a signed-in member (the console\'s Run panel): the lines the code printed, scrubbed of the token data the run was handed. API keys never get them.',
  })),
});

export const AsyncAccepted = Type.Object({ asyncReactorRequestId: Uuid });
