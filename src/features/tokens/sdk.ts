import type { Principal } from '../../access/principal.ts';
import { compileValidator } from '../../http/validate.ts';
import type { SdkHost } from '../../sandbox/index.ts';
import { presentToken } from './present.ts';
import { ListTokensV2Query, TokenId, UpdateTokenBody } from './schema.ts';
import { validTokenRequest, type TokenPatch, type TokenService } from './service.ts';

const validPatch = compileValidator<TokenPatch>(UpdateTokenBody);
const validId = compileValidator<string>(TokenId);
// Checked as GET /v2/tokens checks its query: the same filters, and a bad size or start is an
// error, never quietly replaced (a start that is not a string would page from the first token
// again, for ever); an unknown member is an error too, not a filter quietly dropped.
type ListQuery = Parameters<TokenService['listV2']>[1];
const validListQuery = compileValidator<ListQuery>(ListTokensV2Query);

/**
 * `bt` inside the sandbox (reactors, proxy transforms): each method runs in-process as
 * `principal`, on arguments copied out of the isolate and validated like API bodies.
 */
export function createTokenSdk(
  principal: Principal,
  tokens: TokenService,
  detokenize: (principal: Principal, body: unknown) => Promise<unknown>,
): SdkHost {
  return {
    'tokens.create': async (input) => presentToken(await tokens.create(principal, validTokenRequest(input, 'token'))),
    'tokens.retrieve': async (id) => presentToken(await tokens.get(principal, validId(id, 'id'))),
    'tokens.update': async (id, patch) => presentToken(await tokens.update(principal, validId(id, 'id'), validPatch(patch, 'patch'))),
    'tokens.delete': async (id) => {
      await tokens.remove(principal, validId(id, 'id'));
      return null;
    },
    'tokens.list': async (query) => {
      // A copy: the validator fills in the default size. A start of null is the first page, as
      // the spec's cursor defaults to null; a member left undefined is a member not given.
      const q = validListQuery(query === undefined || query === null ? {} : withoutUnset(structuredClone(query)), 'query');
      const page = await tokens.listV2(principal, q);
      return { pagination: page.pagination, data: page.data.map(presentToken) };
    },
    tokenize: async (body) => tokens.tokenize(principal, body, presentToken),
    detokenize: async (body) => detokenize(principal, body),
  };
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
