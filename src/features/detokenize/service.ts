import type { Principal } from '../../access/principal.ts';
import type { Item } from '../../db/group-commit.ts';
import { ExpressionError, isTemplate, MAX_GROWTH, parsedTemplate, render, usesFilter, type Template, type TokenReference } from '../../expressions/index.ts';
import { ApiError } from '../../http/errors.ts';
import { placePath, type Place } from '../../http/field-path.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import type { LogService } from '../logs/service.ts';
import type { TokenService, TokenView, UsedTokenView } from '../tokens/service.ts';
import type { DisclosureSink } from './disclosed.ts';

export type DetokenizeService = ReturnType<typeof createDetokenizeService>;

/** An expression string, and where it sits (its field path is built only for an error). */
type Found = { place: Place | undefined; template: Template };

/** The walks below recurse; a body nested deeper is refused (400) rather than overflowing the stack (500). */
const MAX_DEPTH = 128;

/**
 * With `boundValues` (POST /detokenize, `bt.detokenize`), the values a body may hold in all
 * (every string, number, boolean, null, array and object counts): the larger of this and
 * VALUES_PER_EXPRESSION times the Detokenize Limit. The request body's size alone lets a
 * body hold hundreds of thousands of values, each walked before anything is detokenized;
 * code calling `bt.detokenize` in a loop would otherwise have the process walk them again
 * and again, between every other request's work.
 */
export const MIN_VALUES_LIMIT = 10_000;
export const VALUES_PER_EXPRESSION = 4;

export type DetokenizeOptions = {
  /** token:read (POST /detokenize, `bt`), or token:use (reactors and proxies). */
  permission?: 'token:read' | 'token:use';
  /** The field the body is at (`body`, `body.args`), for error paths. */
  at?: string;
  /** Bounds the distinct tokens one call may use (reactors: 100). */
  maxTokens?: number;
  /** Where the uses' audit entries go when the caller writes them (see TokenService.resolveForUse). */
  deferAudit?: Item[];
  /** Bounds the values walked: see MIN_VALUES_LIMIT. */
  boundValues?: boolean;
  /** Told every expression's output and every used token's data as shown (see ./disclosed.ts). */
  disclosed?: DisclosureSink;
};

/**
 * POST /detokenize: every string holding `{{ <id> | … }}` or `{{ token: <id> }}` is
 * replaced; a string that is exactly one expression takes the result's JSON type.
 * `permission` is token:read here; reactors and proxies use the same walk with token:use.
 */
export function createDetokenizeService(deps: {
  tokens: TokenService;
  vault: Pick<Vault, 'expressionKeys'>;
  logs: Pick<LogService, 'writeItems'>;
  limitFor: (tenantId: string) => Promise<number>;
}) {
  const { tokens, vault, logs, limitFor } = deps;

  /**
   * `root` names the value walked (`body`, `body.args`); `budget`, the values it may still hold, when bounded.
   * A child's place is made only for what may hold an expression (a template string, an array,
   * an object): most of a body's values are neither, and are only counted.
   */
  function collect(node: unknown, root: string, place: Place | undefined, found: Found[], depth: number, budget?: { left: number; limit: number }): void {
    if (budget && --budget.left < 0) {
      throw ApiError.field(root, `holds more than ${budget.limit} values (strings, numbers, booleans, nulls, arrays and objects each count): at most ${budget.limit} per request`);
    }
    if (typeof node === 'string') {
      if (!isTemplate(node)) return;
      try {
        found.push({ place, template: parsedTemplate(node, 'detokenize') });
      } catch (err) {
        if (err instanceof ExpressionError) throw ApiError.field(placePath(root, place), `invalid detokenization expression "${err.tag}": ${err.message}`);
        throw err;
      }
      return;
    }
    if (node === null || typeof node !== 'object') return;
    if (depth === MAX_DEPTH) throw ApiError.field(placePath(root, place), `is nested too deeply: at most ${MAX_DEPTH} levels of arrays and objects`);
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) visit(node[i], i);
    } else {
      for (const k of Object.keys(node)) visit((node as Record<string, unknown>)[k], k);
    }

    function visit(child: unknown, key: string | number): void {
      if (mayHoldExpression(child)) collect(child, root, { up: place, key }, found, depth + 1, budget);
      else if (budget && --budget.left < 0) collect(child, root, place, found, depth + 1, budget); // throws: over the bound
    }
  }

  return {
    async detokenize(principal: Principal, body: unknown, options: DetokenizeOptions = {}): Promise<unknown> {
      const { permission = 'token:read', at = 'body', maxTokens, deferAudit, disclosed } = options;
      // Looked up first only when it bounds the walk: most bodies hold no expression, and need no limit.
      let limit = options.boundValues ? await limitFor(principal.tenantId) : undefined;
      const found: Found[] = [];
      const values = limit === undefined ? undefined : Math.max(MIN_VALUES_LIMIT, VALUES_PER_EXPRESSION * limit);
      collect(body, at, undefined, found, 0, values === undefined ? undefined : { left: values, limit: values });
      if (found.length === 0) return body;
      const refs: TokenReference[] = [];
      for (const f of found) for (const r of f.template.references) refs.push(r);
      limit ??= await limitFor(principal.tenantId);
      if (refs.length > limit) {
        throw ApiError.field(at, `${refs.length} detokenization expressions exceed the tenant's limit of ${limit} per request`);
      }
      const ids = refs.map((r) => r.id);
      if (maxTokens !== undefined) {
        const distinct = new Set(ids).size;
        if (distinct > maxTokens) throw ApiError.field(at, `${distinct} tokens are referenced; at most ${maxTokens} may be detokenized in one request`);
      }
      // The fields that refer to an unknown id, worked out only when there is one.
      const pathsOf = (id: string) => found.filter((f) => f.template.references.some((r) => r.id === id)).map((f) => placePath(at, f.place));
      // The uses are audited once every expression has rendered, before the result leaves:
      // a request refused below (403) or failing in a filter (400) detokenized nothing.
      const audit = deferAudit ?? [];
      // The whole-token form reads whole rows, and is built only when some expression asks for it
      // (`{{ token: <id> }}`); other uses read only what showing the data needs.
      const used = { deferAudit: audit, pathsOf };
      const whole = refs.some((r) => r.form !== 'data') ? await tokens.resolveForUse(principal, ids, permission, { ...used, whole: true }) : undefined;
      const views: Map<string, UsedTokenView> = whole ?? (await tokens.resolveForUse(principal, ids, permission, used));
      for (const r of refs) {
        const v = views.get(r.id)!;
        if (r.form === 'data' && v.data === undefined) {
          const why = v.transform === 'mask' ? 'its transform masks it, and the token has no mask' : 'its transform redacts it';
          throw ApiError.forbidden(`The API key may not see the data of token ${r.id} (${why}).`);
        }
      }
      const tokenEntries = new Map<string, { data: unknown; token: unknown }>();
      for (const [id, v] of views) tokenEntries.set(id, { data: v.data, token: whole ? toDetokenizedToken(whole.get(id)!) : undefined });
      const scope = {
        tokens: tokenEntries,
        // The tenant's expression keys are only looked up for a body that uses `hmac`.
        hmacKey: found.some((f) => usesFilter(f.template, 'hmac')) ? await vault.expressionKeys(principal.tenantId) : undefined,
        // Shared by every string of the request: its expressions together may add MAX_GROWTH characters.
        growth: { left: MAX_GROWTH },
        onOutput: disclosed && ((value: unknown) => disclosed.rendered(value)),
      };
      // Templates are matched to strings by walk order (the same as collect's): no path is built
      // or looked up for the strings that render.
      let next = 0;
      const replace = (node: unknown): unknown => {
        if (typeof node === 'string') {
          if (!isTemplate(node)) return node;
          const { place, template } = found[next++];
          try {
            return render(template, scope);
          } catch (err) {
            if (err instanceof ExpressionError) throw ApiError.field(placePath(at, place), `detokenization failed in "${err.tag}": ${err.message}`);
            throw err;
          }
        }
        if (Array.isArray(node)) return node.map((item) => replace(item));
        if (node !== null && typeof node === 'object') return replacedObject(node as Record<string, unknown>, replace);
        return node;
      };
      const result = replace(body);
      if (disclosed) for (const [id, v] of views) disclosed.token(id, v.data, { permission, transform: v.transform });
      if (!deferAudit) await logs.writeItems(audit);
      return result;
    },
  };
}

/** Whether a value may hold an expression: a template string, or an array or object to look into. */
function mayHoldExpression(value: unknown): boolean {
  return typeof value === 'string' ? isTemplate(value) : value !== null && typeof value === 'object';
}

/**
 * An object's copy with each own value replaced, keys in their order. A key `__proto__` (JSON
 * may have one) stays an own property, as Object.fromEntries would make it, not a prototype.
 */
function replacedObject(node: Record<string, unknown>, replace: (value: unknown) => unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(node)) {
    const v = replace(node[k]);
    if (k === '__proto__') Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
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
