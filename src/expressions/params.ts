import type { KeyObject } from 'node:crypto';
import { ArgError } from './errors.ts';

export type Scope = {
  variables?: Record<string, unknown>;
  tokens?: Map<string, { data: unknown; token: unknown }>;
  hmacKey?: (name: string) => KeyObject | undefined;
  /**
   * The characters filters may still add (see MAX_GROWTH in render.ts). Renders given the same
   * object share it, so one request cannot multiply the bound by its number of expressions;
   * without it each render has a fresh MAX_GROWTH.
   */
  growth?: { left: number };
  /**
   * Told the value of each tag as it renders (before it is joined into text). Detokenization
   * keeps them so that an error of the code they were handed to can be scrubbed of them.
   */
  onOutput?: (value: unknown) => void;
};

export type ParamType = 'string' | 'integer' | 'boolean' | 'char';

/** One positional filter argument. Without `default` and without `optional` it is required. */
export type Param = {
  readonly name: string;
  readonly type: ParamType;
  readonly optional?: true;
  readonly default?: unknown;
  readonly min?: number;
  readonly max?: number;
  /** For strings: the accepted values. */
  readonly oneOf?: readonly string[];
};

export type FilterDef = {
  readonly params: readonly Param[];
  /** Turns checked arguments into reusable state once (at parse time when they are literals). Throws ArgError. */
  readonly prepare?: (args: readonly unknown[]) => unknown;
  /** Throws FilterError when the value does not fit. */
  readonly apply: (value: unknown, args: readonly unknown[], prepared: unknown, scope: Scope) => unknown;
};

export function required(params: readonly Param[]): number {
  let n = 0;
  for (const p of params) if (!p.optional && p.default === undefined) n++;
  return n;
}

/** Checks written arguments against the parameters and fills in defaults. Throws ArgError. */
export function resolveArgs(filter: string, params: readonly Param[], written: readonly unknown[]): unknown[] {
  const min = required(params);
  if (written.length > params.length) {
    throw new ArgError(params.length, `${filter} takes ${countWords(params.length)}, got ${written.length}`);
  }
  if (written.length < min) {
    throw new ArgError(-1, `${filter} needs argument ${written.length + 1} (${params[written.length].name})`);
  }
  const out = new Array<unknown>(params.length);
  for (let i = 0; i < params.length; i++) {
    const p = params[i];
    const v = i < written.length ? written[i] : undefined;
    if (v === undefined || (v === null && (p.optional || p.default !== undefined))) {
      if (i < min) throw new ArgError(i, expected(filter, p, i));
      out[i] = p.default;
    } else if (!fits(p, v)) {
      throw new ArgError(i, expected(filter, p, i));
    } else {
      out[i] = p.type === 'string' && p.oneOf ? (v as string).toLowerCase() : v;
    }
  }
  return out;
}

function fits(p: Param, v: unknown): boolean {
  switch (p.type) {
    case 'string':
      return typeof v === 'string' && (!p.oneOf || p.oneOf.includes(v.toLowerCase()));
    case 'boolean':
      return typeof v === 'boolean';
    case 'char':
      return typeof v === 'string' && isOneCharacter(v);
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v) && (p.min === undefined || v >= p.min) && (p.max === undefined || v <= p.max);
  }
}

function expected(filter: string, p: Param, i: number): string {
  let what: string;
  switch (p.type) {
    case 'string':
      what = p.oneOf ? `one of ${p.oneOf.map((s) => `'${s}'`).join(', ')}` : 'a string';
      break;
    case 'boolean':
      what = 'true or false';
      break;
    case 'char':
      what = 'a string of exactly one character';
      break;
    case 'integer':
      what =
        p.min === 0 && p.max === undefined
          ? 'a non-negative integer'
          : p.max === undefined
            ? `an integer of at least ${p.min}`
            : `an integer from ${p.min} to ${p.max}`;
      break;
  }
  return `expected ${what} as argument ${i + 1} (${p.name}) of ${filter}`;
}

function countWords(n: number): string {
  return n === 0 ? 'no arguments' : n === 1 ? 'at most 1 argument' : `at most ${n} arguments`;
}

function isOneCharacter(s: string): boolean {
  if (s.length === 1) return !isSurrogate(s.charCodeAt(0));
  return s.length === 2 && isHigh(s.charCodeAt(0)) && isLow(s.charCodeAt(1));
}

const isSurrogate = (c: number) => (c & 0xf800) === 0xd800;
const isHigh = (c: number) => (c & 0xfc00) === 0xd800;
const isLow = (c: number) => (c & 0xfc00) === 0xdc00;
