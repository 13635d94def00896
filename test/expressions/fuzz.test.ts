import assert from 'node:assert/strict';
import { createSecretKey } from 'node:crypto';
import { describe, it } from 'node:test';
import { ExpressionError, MAX_SOURCE, parseTemplate, render, tokenReferences, type Mode, type Scope } from '../../src/expressions/index.ts';

/** mulberry32: a seeded generator, so a failure names a seed that reproduces it. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [
  '{{', '}}', '{', '}', '|', ':', ',', "'", '"', '\\', '[', ']', '.', '-', ' ', '\n', '\t', '$', '*', '0', '4', '-1', '1.5', '1e999',
  'a', 'data', 'data.number', "data['x']", 'data.a[0]', 'token', 'token:', 'true', 'false', 'null', 'nil', 'x_1', '3f6c1a8e-2d5e-4b43-9b7e-0c1c2f3d4e5f',
  'json', "'$.number'", "'$.a[*]'", "'$..x'", 'json_stringify', 'last4', 'reveal', 'reveal_last', 'card_bin', 'card_exp', "'MM/YY'", 'card_mask',
  'alias_card', 'alias_preserve_format', 'alias_preserve_length', 'pad_left', 'pad_right', 'to_string', 'to_number', 'to_boolean', 'to_base64',
  'to_base16', 'hmac', "'k'", "'sha512'", 'é', '💳', '\ud800', '\udc00', '\u0000', '\u00a0', '\\u00e9', '\\q', 'revael', '99999999',
];

function garbage(next: () => number): string {
  const n = Math.floor(next() * 24);
  let s = '';
  for (let i = 0; i < n; i++) s += PIECES[Math.floor(next() * PIECES.length)];
  return s;
}

/** Well-formed-looking tags with a random tweak, to reach deep into the parser and every filter. */
function nearlyValid(next: () => number, mode: Mode): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)];
  const subject = mode === 'detokenize' ? pick(['tok-1', 'token: tok-1', 'card.2', 'token: card.2', 'str_3']) : pick(['data', 'data.number', "data['number']", 'data.items[0]', "'text'", '42', 'null', 'other.x']);
  const filters = ['json: \'$.number\'', 'json: \'$.items[*]\'', 'json_stringify', 'last4', 'reveal: 2', "reveal: 1, '*'", 'reveal_last: 4', 'card_bin', "card_exp: 'MM/YYYY'", 'card_mask: true, true', 'alias_card', 'alias_preserve_format: 1, 1', 'alias_preserve_length', 'pad_left: 8, \'0\'', 'pad_right: 3', 'to_string', 'to_number', 'to_boolean', 'to_base64', 'to_base16', "hmac: 'k'", "hmac: 'k', 'sha512'"];
  let tag = `{{ ${subject}`;
  const count = Math.floor(next() * 4);
  for (let i = 0; i < count; i++) tag += ` | ${pick(filters)}`;
  tag += ' }}';
  let s = pick(['', 'text ', '']) + tag + pick(['', ' and {{ ' + subject + ' }}', '']);
  const edits = Math.floor(next() * 3);
  for (let i = 0; i < edits; i++) {
    const at = Math.floor(next() * (s.length + 1));
    const r = next();
    if (r < 0.4) s = s.slice(0, at) + s.slice(at + 1);
    else if (r < 0.8) s = s.slice(0, at) + pick(PIECES) + s.slice(at);
    else s = s.slice(0, at) + pick(PIECES) + s.slice(at + 1);
  }
  return s;
}

const VALUES: unknown[] = [null, '', 'x', '4242424242424242', '4242 4242 4242 4242', 'é💳', 0, 1, -3.5, true, false, [], [1, 'a'], {}, { number: '4242424242424242', expiration_month: 3, expiration_year: 2027 }, { items: [1, { n: 2 }] }];
const key = createSecretKey(Buffer.alloc(32, 7));

function scopeFor(next: () => number, template: ReturnType<typeof parseTemplate>): Scope {
  const pick = () => VALUES[Math.floor(next() * VALUES.length)];
  const tokens = new Map<string, { data: unknown; token: unknown }>();
  for (const r of tokenReferences(template)) tokens.set(r.id, { data: pick(), token: { id: r.id, data: pick() } });
  return { tokens, variables: { data: pick(), other: pick() }, hmacKey: () => key };
}

/** Parses and renders; anything thrown must be an ExpressionError with a position inside the source. */
function exercise(source: string, mode: Mode, next: () => number): void {
  try {
    const t = parseTemplate(source, mode);
    render(t, scopeFor(next, t));
  } catch (err) {
    if (!(err instanceof ExpressionError)) {
      assert.fail(`${mode} ${JSON.stringify(source)} threw ${String(err)}`);
    }
    assert.ok(Number.isInteger(err.position) && err.position >= 0 && err.position <= Array.from(source).length, `${JSON.stringify(source)}: position ${err.position}`);
    assert.ok(err.message.length > 0);
  }
}

describe('property: any string parses (and renders) or throws an ExpressionError', () => {
  for (const mode of ['template', 'detokenize'] as const) {
    it(`${mode}: random garbage`, () => {
      for (let seed = 1; seed <= 3000; seed++) {
        const next = rng(seed);
        exercise(garbage(next), mode, next);
      }
    });
    it(`${mode}: mutated near-valid templates`, () => {
      let parsed = 0;
      for (let seed = 1; seed <= 3000; seed++) {
        const next = rng(seed * 7919);
        const source = nearlyValid(next, mode);
        exercise(source, mode, next);
        try {
          parseTemplate(source, mode);
          parsed++;
        } catch {}
      }
      // The generator must reach past the parser often enough to exercise the filters.
      assert.ok(parsed > 600, `only ${parsed} parsed`);
    });
    it(`${mode}: random code units`, () => {
      const next = rng(42);
      for (let i = 0; i < 2000; i++) {
        let s = '{{ ';
        const n = Math.floor(next() * 16);
        for (let j = 0; j < n; j++) s += String.fromCharCode(Math.floor(next() * 0x10000));
        exercise(s + (next() < 0.5 ? ' }}' : ''), mode, next);
      }
    });
  }
});

describe('large and pathological sources stay fast', () => {
  const big: [name: string, source: string][] = [
    ['many tags', '{{ data.number | last4 }} '.repeat(Math.floor(MAX_SOURCE / 27))],
    ['a long filter chain', `{{ data${' | to_string'.repeat(Math.floor((MAX_SOURCE - 20) / 12))} }}`],
    ['only opening braces', '{'.repeat(MAX_SOURCE)],
    ['only closing braces', '}'.repeat(MAX_SOURCE)],
    ['an unterminated string', `{{ '${'a'.repeat(MAX_SOURCE - 10)}`],
    ['a long escape run', `{{ '${'\\n'.repeat((MAX_SOURCE - 10) / 2)}' }}`],
    ['a long path', `{{ data${'.a'.repeat((MAX_SOURCE - 10) / 2)} }}`],
    ['many brackets', `{{ data${'[0]'.repeat((MAX_SOURCE - 10) / 3)} }}`],
    ['a long JSON path', `{{ data | json: '$${'[*]'.repeat((MAX_SOURCE - 30) / 3)}' }}`],
  ];
  for (const [name, source] of big) {
    it(name, () => {
      const started = performance.now();
      for (const mode of ['template', 'detokenize'] as const) {
        try {
          const t = parseTemplate(source, mode);
          render(t, { variables: { data: { number: '4242424242424242', a: [[1]] } }, tokens: new Map(tokenReferences(t).map((r) => [r.id, { data: [[1]], token: {} }])) });
        } catch (err) {
          assert.ok(err instanceof ExpressionError, String(err));
        }
      }
      const ms = performance.now() - started;
      assert.ok(ms < 1000, `${name} took ${ms.toFixed(0)} ms`);
    });
  }
});
