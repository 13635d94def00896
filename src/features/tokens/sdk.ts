import type { Principal } from '../../access/principal.ts';
import { compileValidator } from '../../http/validate.ts';
import type { SdkHost } from '../../sandbox/index.ts';
import { presentToken } from './present.ts';
import { TokenId, UpdateTokenBody } from './schema.ts';
import { validTokenRequest, type TokenPatch, type TokenService } from './service.ts';

const validPatch = compileValidator<TokenPatch>(UpdateTokenBody);
const validId = compileValidator<string>(TokenId);

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
      const q = (query ?? {}) as { size?: unknown; start?: unknown };
      const size = typeof q.size === 'number' && Number.isInteger(q.size) && q.size >= 1 && q.size <= 100 ? q.size : 20;
      const page = await tokens.listV2(principal, { id: [], type: [], size, ...(typeof q.start === 'string' ? { start: q.start } : {}) });
      return { pagination: page.pagination, data: page.data.map(presentToken) };
    },
    tokenize: async (body) => tokens.tokenize(principal, body, presentToken),
    detokenize: async (body) => detokenize(principal, body),
  };
}
