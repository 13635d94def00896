import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluate, ExpressionError, parseTemplate, render } from '../../src/expressions/index.ts';

const RUNS = 200;

function luhnValid(s: string): boolean {
  const digits = s.replace(/\D/g, '');
  let sum = 0;
  for (let i = digits.length - 1, dbl = false; i >= 0; i--, dbl = !dbl) {
    let d = Number(digits[i]);
    if (dbl) d = d * 2 > 9 ? d * 2 - 9 : d * 2;
    sum += d;
  }
  return sum % 10 === 0;
}

function each(source: string, v: unknown, check: (out: string) => void): Set<string> {
  const t = parseTemplate(source, 'template');
  const seen = new Set<string>();
  for (let i = 0; i < RUNS; i++) {
    const out = render(t, { variables: { v } });
    assert.equal(typeof out, 'string');
    check(out as string);
    seen.add(out as string);
  }
  return seen;
}

describe('alias_card', () => {
  const cards = ['4242424242424242', '4000056655665556', '378282246310005', '6011111111111117', '3056930009020004', '6200000000000005', '123456789012', '1234567890123456789', '4242 4242 4242 4242', '4242-4242-4242-4242', '4111111111111112'];
  for (const number of cards) {
    it(`${number}: same length, first 6, last 4 and separators; Luhn-valid; random; never the original`, () => {
      const digits = number.replace(/\D/g, '');
      const seen = each('{{ v | alias_card }}', number, (out) => {
        assert.equal(out.length, number.length);
        assert.equal(out.replace(/\d/g, '0'), number.replace(/\d/g, '0'), 'separators in place');
        const d = out.replace(/\D/g, '');
        assert.equal(d.slice(0, 6), digits.slice(0, 6));
        assert.equal(d.slice(-4), digits.slice(-4));
        assert.ok(luhnValid(out), out);
        assert.notEqual(d, digits);
      });
      // One middle digit is solved for Luhn, the rest are free: a 12-digit number has one.
      const free = digits.length - 11;
      assert.ok(seen.size >= Math.min(RUNS / 4, 10 ** free / 2), `only ${seen.size} distinct aliases`);
    });
  }

  it('takes card data and numbers', () => {
    const out = evaluate('{{ v | alias_card }}', 'template', { variables: { v: { number: '4242424242424242' } } }) as string;
    assert.match(out, /^424242\d{6}4242$/);
    assert.match(evaluate('{{ v | alias_card }}', 'template', { variables: { v: 4242424242424242 } }) as string, /^424242\d{6}4242$/);
    assert.equal(evaluate('{{ v | alias_card }}', 'template', { variables: { v: null } }), null);
  });

  const bad: [unknown, RegExp][] = [
    ['12345678901', /alias_card expects a card number of 12 to 19 digits at 7/],
    ['12345678901234567890', /12 to 19 digits/],
    ['', /12 to 19 digits/],
    ['4242424242424abc', /alias_card expects a card number \(digits, spaces and dashes\)/],
    ['٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢', /digits, spaces and dashes/],
    [true, /alias_card expects a card number or card data with a number \(got a boolean\)/],
    [{ cvc: '123' }, /got an object/],
  ];
  for (const [v, re] of bad) {
    it(`rejects ${JSON.stringify(v)}`, () => {
      assert.throws(() => evaluate('{{ v | alias_card }}', 'template', { variables: { v } }), (err) => err instanceof ExpressionError && re.test(err.message));
    });
  }
  it('takes no arguments', () => assert.throws(() => parseTemplate('{{ v | alias_card: 4 }}', 'template'), /alias_card takes no arguments/));
});

describe('alias_preserve_format', () => {
  const rows: [v: string, args: string, pattern: RegExp][] = [
    ['Ab1-x', '', /^[A-Z][a-z]\d-[a-z]$/],
    ['123-45-6789', '', /^\d{3}-\d{2}-\d{4}$/],
    ['123-45-6789', ': 0, 4', /^\d{3}-\d{2}-6789$/],
    ['123-45-6789', ': 3, 0', /^123-\d{2}-\d{4}$/],
    ['123-45-6789', ': 4, 4', /^123-\d{2}-6789$/],
    ['John Smith', '', /^[A-Z][a-z]{3} [A-Z][a-z]{4}$/],
    ['José Ñu 💳', '', /^[A-Z][a-z]{2}é Ñ[a-z] 💳$/u],
    ['💳ab💳', ': 1, 1', /^💳[a-z]{2}💳$/u],
  ];
  for (const [v, args, pattern] of rows) {
    it(`${v} | alias_preserve_format${args}`, () => {
      const seen = each(`{{ v | alias_preserve_format${args} }}`, v, (out) => {
        assert.match(out, pattern);
        assert.equal([...out].length, [...v].length);
      });
      assert.ok(seen.size > 1);
    });
  }
  const same: [v: unknown, args: string, out: unknown][] = [
    ['', '', ''],
    ['abc', ': 2, 1', 'abc'],
    ['abc', ': 5', 'abc'],
    ['-- .', '', '-- .'],
    [null, '', null],
  ];
  for (const [v, args, out] of same) {
    it(`${JSON.stringify(v)} | alias_preserve_format${args} → ${JSON.stringify(out)}`, () => {
      assert.equal(evaluate(`{{ v | alias_preserve_format${args} }}`, 'template', { variables: { v } }), out);
    });
  }
  it('a number aliases its digits', () => {
    assert.match(evaluate('{{ v | alias_preserve_format: 1 }}', 'template', { variables: { v: 12345 } }) as string, /^1\d{4}$/);
  });
  for (const args of [': -1', ": 'a'", ': 1, -2', ': 1, 2, 3', ': 1.5']) {
    it(`rejects alias_preserve_format${args}`, () => assert.throws(() => parseTemplate(`{{ v | alias_preserve_format${args} }}`, 'template'), ExpressionError));
  }
});

describe('alias_preserve_length', () => {
  const rows: [v: string, args: string, pattern: RegExp][] = [
    ['secret', '', /^[A-Za-z0-9]{6}$/],
    ['123-45-6789', ': 0, 4', /^[A-Za-z0-9]{7}6789$/],
    ['123-45-6789', ': 2, 2', /^12[A-Za-z0-9]{7}89$/],
    ['é💳 x', '', /^[A-Za-z0-9]{4}$/],
  ];
  for (const [v, args, pattern] of rows) {
    it(`${v} | alias_preserve_length${args}`, () => {
      const seen = each(`{{ v | alias_preserve_length${args} }}`, v, (out) => assert.match(out, pattern));
      assert.ok(seen.size > RUNS / 2);
    });
  }
  for (const [v, out] of [['', ''], [null, null]] as const) {
    it(`${JSON.stringify(v)} → ${JSON.stringify(out)}`, () => assert.equal(evaluate('{{ v | alias_preserve_length }}', 'template', { variables: { v } }), out));
  }
  it('reveals everything when the reveals cover the value', () => {
    assert.equal(evaluate('{{ v | alias_preserve_length: 2, 2 }}', 'template', { variables: { v: 'abcd' } }), 'abcd');
  });
  it('rejects bad arguments', () => assert.throws(() => parseTemplate("{{ v | alias_preserve_length: 'x' }}", 'template'), /expected a non-negative integer as argument 1 \(reveal_first\) of alias_preserve_length/));
});
