import type { FilterDef } from './params.ts';

export type Mode = 'template' | 'detokenize';

export type TokenReference = { id: string; form: 'data' | 'token' };

export type Literal = { readonly kind: 'literal'; readonly value: unknown; readonly pos: number };

/** `data.a['b'][0]`: a root variable then property names (strings) or array indexes (numbers). */
export type Path = {
  readonly kind: 'path';
  readonly root: string;
  readonly segments: readonly (string | number)[];
  readonly pos: number;
};

/** Detokenize mode: `<id>` (the token's data) or `token: <id>` (the whole token). */
export type TokenSubject = { readonly kind: 'token'; readonly id: string; readonly form: 'data' | 'token'; readonly pos: number };

export type Subject = Literal | Path | TokenSubject;
export type Arg = Literal | Path;

export type FilterCall = {
  readonly name: string;
  readonly def: FilterDef;
  readonly args: readonly Arg[];
  /** Arguments with defaults filled in, when every written one is a literal (else null: resolved per render). */
  readonly resolved: readonly unknown[] | null;
  /** What `def.prepare` made of `resolved` (a compiled JSON path, a parsed date format…). */
  readonly prepared: unknown;
  readonly pos: number;
};

export type Output = { readonly subject: Subject; readonly filters: readonly FilterCall[]; readonly pos: number };

export type Part = string | Output;

/** A parsed template. Immutable: parse once, render many times, share freely. */
export type Template = {
  readonly mode: Mode;
  readonly source: string;
  readonly parts: readonly Part[];
  /** The only output tag when the source is exactly one tag (ignoring surrounding whitespace). */
  readonly single: Output | null;
  readonly references: readonly TokenReference[];
};
