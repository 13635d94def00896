/**
 * Expressions: a small Liquid dialect for masks, fingerprints, search indexes (template
 * mode, over a token's `data`) and detokenization (detokenize mode, over token ids).
 * See docs/expressions.md.
 */
export { ExpressionError } from './errors.ts';
export type { Mode, Template, TokenReference } from './ast.ts';
export type { Scope } from './params.ts';
export { parseTemplate, MAX_SOURCE } from './parser.ts';
export { render, evaluate, parsedTemplate, MAX_GROWTH } from './render.ts';

import type { Template, TokenReference } from './ast.ts';

/** Cheap: whether the string holds '{{' at all. A string without it renders to itself. */
export function isTemplate(source: string): boolean {
  return typeof source === 'string' && source.includes('{{');
}

/** Whether some tag of the template applies the filter `name`. */
export function usesFilter(t: Template, name: string): boolean {
  return t.parts.some((p) => typeof p !== 'string' && p.filters.some((f) => f.name === name));
}

/** Detokenize mode: every token the template references, in order, duplicates kept (one per expression). */
export function tokenReferences(t: Template): TokenReference[] {
  return t.references.map((r) => ({ id: r.id, form: r.form }));
}
