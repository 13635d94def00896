import type { Principal } from '../../access/principal.ts';
import { ExpressionError, isTemplate, parseTemplate, render, tokenReferences, type Template } from '../../expressions/index.ts';
import { ApiError } from '../../http/errors.ts';
import type { TokenService, TokenView } from '../tokens/service.ts';

export type DetokenizeService = ReturnType<typeof createDetokenizeService>;

type Found = { at: string; template: Template };

/**
 * POST /detokenize: every string holding `{{ <id> | … }}` or `{{ token: <id> }}` is
 * replaced; a string that is exactly one expression takes the result's JSON type.
 * `permission` is token:read here; reactors and proxies use the same walk with token:use.
 */
export function createDetokenizeService(deps: { tokens: TokenService; limit: number }) {
  const { tokens, limit } = deps;

  function collect(node: unknown, at: string, found: Found[]): void {
    if (typeof node === 'string') {
      if (!isTemplate(node)) return;
      try {
        found.push({ at, template: parseTemplate(node, 'detokenize') });
      } catch (err) {
        if (err instanceof ExpressionError) throw ApiError.field(at, `invalid detokenization expression: ${err.message}`);
        throw err;
      }
    } else if (Array.isArray(node)) node.forEach((item, i) => collect(item, `${at}[${i}]`, found));
    else if (node !== null && typeof node === 'object') for (const [k, v] of Object.entries(node)) collect(v, `${at}.${k}`, found);
  }

  return {
    async detokenize(principal: Principal, body: unknown, permission: 'token:read' | 'token:use' = 'token:read', at = 'body'): Promise<unknown> {
      const found: Found[] = [];
      collect(body, at, found);
      if (found.length === 0) return body;
      const refs = found.flatMap((f) => tokenReferences(f.template));
      if (refs.length > limit) {
        throw ApiError.field(at, `${refs.length} detokenization expressions exceed the tenant's limit of ${limit} per request`);
      }
      const views = await tokens.resolveForUse(principal, refs.map((r) => r.id), permission);
      for (const r of refs) {
        if (r.form === 'data' && views.get(r.id)!.data === undefined) {
          throw ApiError.forbidden(`The API key may not see the data of token ${r.id} (its transform redacts it).`);
        }
      }
      const scopeTokens = new Map([...views].map(([id, v]) => [id, { data: v.data, token: toDetokenizedToken(v) }]));
      const rendered = new Map(found.map((f) => [f.at, f.template]));
      const replace = (node: unknown, path: string): unknown => {
        const template = rendered.get(path);
        if (template) {
          try {
            return render(template, { tokens: scopeTokens });
          } catch (err) {
            if (err instanceof ExpressionError) throw ApiError.field(path, `detokenization failed: ${err.message}`);
            throw err;
          }
        }
        if (Array.isArray(node)) return node.map((item, i) => replace(item, `${path}[${i}]`));
        if (node !== null && typeof node === 'object') return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, replace(v, `${path}.${k}`)]));
        return node;
      };
      return replace(body, at);
    },
  };
}

/** The spec's Detokenized token: the whole-token form of `{{ token: <id> }}`. */
export function toDetokenizedToken(v: TokenView): Record<string, unknown> {
  const t = v.row;
  return {
    id: t.id,
    type: t.type,
    tenant_id: t.tenant_id,
    ...(v.data !== undefined ? { data: v.data } : {}),
    containers: t.containers,
    metadata: t.metadata,
    created_by: t.created_by ?? undefined,
    created_at: t.created_at.toISOString(),
  };
}
