import type { Principal } from '../../access/principal.ts';
import { bodyTooLarge } from '../../http/errors.ts';
import { MAX_BODY_BYTES } from '../../http/json-body.ts';
import { compileValidator } from '../../http/validate.ts';
import type { SdkHost } from '../../sandbox/index.ts';
import type { DisclosureSink } from '../detokenize/disclosed.ts';
import type { DetokenizeOptions } from '../detokenize/service.ts';
import { presentToken } from './present.ts';
import { ListTokensV2Query, TokenId, UpdateTokenBody } from './schema.ts';
import { validTokenRequest, type TokenPatch, type TokenService, type TokenView } from './service.ts';

const validPatch = compileValidator<TokenPatch>(UpdateTokenBody);
const validId = compileValidator<string>(TokenId);
// Checked as GET /v2/tokens checks its query: the same filters, and a bad size or start is an
// error, never quietly replaced (a start that is not a string would page from the first token
// again, for ever); an unknown member is an error too, not a filter quietly dropped.
type ListQuery = Parameters<TokenService['listV2']>[1];
const validListQuery = compileValidator<ListQuery>(ListTokensV2Query);

/**
 * `bt` inside the sandbox (reactors, proxy transforms): each method runs in-process as
 * `principal`, on arguments copied out of the isolate and held to the limits of the API
 * route it mirrors, with the route's errors: a body of at most MAX_BODY_BYTES as JSON (413),
 * validated like the route's body or query (so at most 100 tokens a page, 100 token requests
 * a tokenize), and for `detokenize` the tenant's Detokenize Limit and the bound on the values
 * a body holds (POST /detokenize's `boundValues`). `disclosed` is told of every token's data
 * a method hands to the code, so that the run's errors can be scrubbed of it.
 */
export function createTokenSdk(
  principal: Principal,
  tokens: TokenService,
  detokenize: (principal: Principal, body: unknown, options: DetokenizeOptions) => Promise<unknown>,
  disclosed?: DisclosureSink,
): SdkHost {
  // A token read is one a stored reply showing the run's output depends on; one the code made
  // holds what the code had already, and only its values are kept to scrub.
  const read = (v: TokenView) => {
    if (v.data !== undefined) disclosed?.token(v.row.id, v.data);
    return presentToken(v);
  };
  const made = (v: TokenView) => {
    if (v.data !== undefined) disclosed?.token(undefined, v.data);
    return presentToken(v);
  };
  return {
    'tokens.create': async (input) => made(await tokens.create(principal, validTokenRequest(body(input), 'token'))),
    'tokens.retrieve': async (id) => read(await tokens.get(principal, validId(id, 'id'))),
    'tokens.update': async (id, patch) => read(await tokens.update(principal, validId(id, 'id'), validPatch(body(patch), 'patch'))),
    'tokens.delete': async (id) => {
      await tokens.remove(principal, validId(id, 'id'));
      return null;
    },
    'tokens.list': async (query) => {
      // A copy: the validator fills in the default size. A start of null is the first page, as
      // the spec's cursor defaults to null; a member left undefined is a member not given.
      const q = validListQuery(query === undefined || query === null ? {} : withoutUnset(structuredClone(query)), 'query');
      const page = await tokens.listV2(principal, q);
      return { pagination: page.pagination, data: page.data.map(read) };
    },
    tokenize: async (payload) => tokens.tokenize(principal, body(payload), made),
    detokenize: async (payload) => detokenize(principal, body(payload), { permission: 'token:read', at: 'body', boundValues: true, disclosed }),
  };
}

/**
 * An argument that stands for a request body, refused as the route refuses a body over its
 * size (an isolate may send more: its messages are bounded by the sandbox's own limit).
 */
function body(value: unknown): unknown {
  if (value !== undefined && Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') > MAX_BODY_BYTES) throw bodyTooLarge();
  return value;
}

/**
 * An object's members without those set to undefined, and without a null `start`; a single
 * `id` or `type` string becomes a list of one, as a query string's lone `?type=card` does.
 * Anything else as it is.
 */
function withoutUnset(query: unknown): unknown {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) return query;
  return Object.fromEntries(
    Object.entries(query)
      .filter(([k, v]) => v !== undefined && !(k === 'start' && v === null))
      .map(([k, v]) => ((k === 'id' || k === 'type') && typeof v === 'string' ? [k, [v]] : [k, v])),
  );
}
