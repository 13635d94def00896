import { uuidv7 } from '../../db/ids.ts';
import type { Principal } from '../../access/principal.ts';
import { isContainer } from '../../access/rules.ts';
import { evaluate, ExpressionError, MAX_GROWTH, type Scope } from '../../expressions/index.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { childPath } from '../../http/field-path.ts';
import type { Vault } from '../../vault/tenant-keys.ts';
import { TOKEN_TYPES } from '../../vault/token-types.ts';
import { MAX_METADATA_KEYS } from './schema.ts';
import type { NewToken, TokenRow } from './store.ts';
import type { TokenInput } from './service.ts';

/**
 * What a token row is made of, from a create or a patch: the data checked by its type, the
 * mask rendered, the fingerprint and search values computed, the secret part encrypted. And
 * the bounds on masks and the expressions in them.
 */

/** What the ciphertext holds: the data and the mask rendered from it at write time. */
export type Secret = { data: unknown; mask?: unknown };

/**
 * Validates and prepares everything a token row needs; `at` prefixes error field paths.
 * `previous` and `previousData`: the token a patch changes, and its data before the patch.
 */
export async function prepareToken(
  vault: Vault,
  principal: Principal,
  input: TokenInput,
  at: string,
  previous?: TokenRow,
  previousData?: unknown,
): Promise<{ row: NewToken; secret: Secret }> {
  const type = TOKEN_TYPES[input.type];
  const errors = new FieldErrorList();
  const data = type.validate(input.data, `${at}.data`, errors, previousData);
  const containers = input.containers ?? previous?.containers ?? [type.container];
  const expiresAt = input.expires_at ? new Date(input.expires_at) : null;
  if (expiresAt && expiresAt.getTime() <= Date.now()) errors.add(`${at}.expires_at`, 'must be in the future');
  // An offset can carry 9999-12-31 into year 10000, which the database cannot be sent.
  else if (expiresAt && expiresAt.getUTCFullYear() > 9999) errors.add(`${at}.expires_at`, 'must be no later than 9999-12-31T23:59:59.999Z');
  const metadata = input.metadata ?? previous?.metadata ?? {};
  // The schema bounds a created token's metadata; a merge patch can add keys to what is there.
  if (Object.keys(metadata).length > MAX_METADATA_KEYS) errors.add(`${at}.metadata`, `must have at most ${MAX_METADATA_KEYS} keys`);
  if (input.mask !== undefined) checkMask(input.mask, `${at}.mask`, errors);
  errors.throwIfAny();

  const maskSpec = input.mask === undefined ? (previous ? parseMask(previous.mask) : type.mask) : input.mask;
  const fingerprintExpression = input.fingerprint_expression === undefined ? (previous ? previous.fingerprint_expression : type.fingerprint) : input.fingerprint_expression;
  const searchIndexes = input.search_indexes ?? previous?.search_indexes ?? [];
  const extras = input.extras ?? (previous?.views?._extras as Record<string, unknown> | undefined);
  // One growth budget for the token's mask, fingerprint and search indexes together.
  const scope: Scope = { variables: { data }, hmacKey: await vault.expressionKeys(principal.tenantId), growth: { left: MAX_GROWTH } };

  const mask = maskSpec === null ? undefined : renderMask(maskSpec, scope, `${at}.mask`, { left: MASK_LIMITS.rendered, root: `${at}.mask` });
  const canonical = fingerprintExpression === null ? null : text(expression(fingerprintExpression, scope, `${at}.fingerprint_expression`));
  const fingerprint = canonical ? await vault.hmac(principal.tenantId, `fingerprint:${input.type}`, canonical) : null;
  const hashes: string[] = [];
  for (const [i, source] of searchIndexes.entries()) {
    const value = text(expression(source, scope, childPath(`${at}.search_indexes`, i)));
    if (value) hashes.push(await vault.hmac(principal.tenantId, 'search', value));
  }
  // Time-ordered, so the primary key grows at its right edge (docs/decisions.md, "Tokens").
  const id = previous?.id ?? input.id ?? uuidv7();
  const secret: Secret = mask === undefined ? { data } : { data, mask };
  const { ciphertext, dataKeyId } = await vault.encrypt(principal.tenantId, id, secret);
  return {
    secret,
    row: {
      id,
      type: input.type,
      ciphertext,
      data_key_id: dataKeyId,
      containers,
      metadata,
      mask: maskSpec === null ? null : JSON.stringify(maskSpec),
      fingerprint,
      fingerprint_expression: fingerprintExpression,
      search_indexes: searchIndexes,
      search_hashes: [...new Set(hashes)],
      deduplicate_token: input.deduplicate_token ?? previous?.deduplicate_token ?? false,
      // Beside the views, as what the API shows but never evaluates: not part of the data.
      views: extras && Object.keys(extras).length > 0 ? { ...(type.views?.(data) ?? {}), _extras: extras } : (type.views?.(data) ?? null),
      expires_at: input.expires_at === undefined ? (previous?.expires_at ?? null) : expiresAt,
      created_by: previous ? previous.created_by : principal.actorId,
    },
  };
}

export const CONTAINER_MESSAGE = 'must be a path of lowercase segments that starts and ends with "/", e.g. /pci/high/';

/** Checked before any permission check, so a malformed container is a 400, never a 403. */
export function checkContainers(containers: string[], at: string): void {
  const errors = new FieldErrorList();
  containers.forEach((c, i) => {
    if (!isContainer(c)) errors.add(childPath(at, i), CONTAINER_MESSAGE);
  });
  errors.throwIfAny();
}

export function expression(source: string, scope: Scope, field: string): unknown {
  try {
    return evaluate(source, 'template', scope);
  } catch (err) {
    if (err instanceof ExpressionError) throw ApiError.field(field, `invalid expression "${source.slice(0, 200)}": ${err.message}`);
    throw err;
  }
}

/**
 * A mask is a display value: bounded in nesting, in each expression, in its expressions in all
 * and in what it renders to (a few `pad_left: 100000` tags would otherwise build megabytes).
 */
export const MASK_LIMITS = { depth: 32, expression: 2000, source: 20_000, rendered: 100_000 };

/** Adds the first way the mask exceeds MASK_LIMITS to `errors`. */
export function checkMask(spec: unknown, field: string, errors: FieldErrorList): void {
  let size = 0;
  const walk = (node: unknown, at: string, depth: number): string | undefined => {
    if (depth > MASK_LIMITS.depth) return `is nested too deeply: at most ${MASK_LIMITS.depth} levels of arrays and objects`;
    if (typeof node === 'string') {
      if (node.length > MASK_LIMITS.expression) return `${at} must be at most ${MASK_LIMITS.expression} characters`;
      size += node.length;
    } else if (node !== null && typeof node === 'object') {
      for (const [k, v] of Object.entries(node)) {
        size += k.length;
        const problem = walk(v, childPath(at, Array.isArray(node) ? Number(k) : k), depth + 1);
        if (problem) return problem;
      }
    }
    return size > MASK_LIMITS.source ? `must be at most ${MASK_LIMITS.source} characters of expressions and keys in all` : undefined;
  };
  const problem = walk(spec, field, 0);
  if (problem) errors.add(field, problem);
}

/** `budget.root` is the whole mask's field, where exceeding the rendered limit is reported. */
export function renderMask(spec: unknown, scope: Scope, field: string, budget: { left: number; root: string }): unknown {
  if (typeof spec === 'string') {
    const value = expression(spec, scope, field);
    budget.left -= typeof value === 'string' ? value.length : text(value).length;
    if (budget.left < 0) throw ApiError.field(budget.root, `renders to more than ${MASK_LIMITS.rendered} characters in all`);
    return value;
  }
  if (Array.isArray(spec)) return spec.map((s, i) => renderMask(s, scope, childPath(field, i), budget));
  if (spec !== null && typeof spec === 'object') {
    // A member that renders to null (a card stored without an expiry) is left out: the masked
    // view shows what the data holds, not fields it never had.
    const members = Object.entries(spec).map(([k, v]) => [k, renderMask(v, scope, childPath(field, k), budget)] as const);
    return Object.fromEntries(members.filter(([, value]) => value !== null));
  }
  return spec;
}

export function parseMask(stored: string | null): unknown {
  return stored === null ? null : JSON.parse(stored);
}

export function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
