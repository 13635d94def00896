import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluate, ExpressionError, isTemplate, parsedTemplate, parseTemplate, render, tokenReferences, type Scope } from '../../src/expressions/index.ts';

const A = '3f6c1a8e-2d5e-4b43-9b7e-0c1c2f3d4e5f';
const B = 'my-custom_id.1';

describe('isTemplate', () => {
  const rows: [unknown, boolean][] = [
    ['{{ x }}', true],
    ['text {{', true],
    ['a{{', true],
    ['{ {', false],
    ['}}', false],
    ['', false],
    ['plain', false],
    [42, false],
    [null, false],
  ];
  for (const [v, expected] of rows) it(`${JSON.stringify(v)} → ${expected}`, () => assert.equal(isTemplate(v as string), expected));
});

describe('tokenReferences', () => {
  const rows: [source: string, expected: { id: string; form: 'data' | 'token' }[]][] = [
    [`{{ ${A} }}`, [{ id: A, form: 'data' }]],
    [`{{ token: ${A} }}`, [{ id: A, form: 'token' }]],
    [`Card {{ ${B} | last4 }} exp {{ ${B} | card_exp: 'MM/YY' }} of {{ token: ${A} | json: '$.type' }}`, [{ id: B, form: 'data' }, { id: B, form: 'data' }, { id: A, form: 'token' }]],
    ['{{ token }}', [{ id: 'token', form: 'data' }]],
    ['no expressions', []],
    ['', []],
  ];
  for (const [source, expected] of rows) it(source || '(empty)', () => assert.deepEqual(tokenReferences(parseTemplate(source, 'detokenize')), expected));

  it('is empty in template mode', () => assert.deepEqual(tokenReferences(parseTemplate('{{ data.number }} {{ token }}', 'template')), []));

  it('returns a fresh array each time', () => {
    const t = parseTemplate(`{{ ${A} }}`, 'detokenize');
    tokenReferences(t).push({ id: 'x', form: 'data' });
    tokenReferences(t)[0].id = 'changed';
    assert.deepEqual(tokenReferences(t), [{ id: A, form: 'data' }]);
  });
});

describe('parsedTemplate', () => {
  it('parses a source once per mode and hands the same template back', () => {
    const source = `{{ ${A} | json: '$.number' }}`;
    const first = parsedTemplate(source, 'detokenize');
    assert.equal(parsedTemplate(source, 'detokenize'), first);
    assert.deepEqual(first, parseTemplate(source, 'detokenize'));
    const inTemplateMode = parsedTemplate('{{ data.number | last4 }}', 'template');
    assert.notEqual(parsedTemplate('{{ data.number | last4 }}', 'detokenize'), inTemplateMode);
  });

  it('parses a source over 2,000 characters every time, and renders it the same', () => {
    const source = `${'x'.repeat(2000)}{{ ${A} | last4 }}`;
    const first = parsedTemplate(source, 'detokenize');
    assert.notEqual(parsedTemplate(source, 'detokenize'), first);
    const scope: Scope = { tokens: new Map([[A, { data: '4242424242424242', token: undefined }]]) };
    assert.equal(render(parsedTemplate(source, 'detokenize'), scope), `${'x'.repeat(2000)}4242`);
  });

  it('keeps nothing of a source that does not parse: each call fails the same way', () => {
    for (let i = 0; i < 2; i++) assert.throws(() => parsedTemplate(`{{ ${A} | no_such_filter }}`, 'detokenize'), ExpressionError);
  });
});

describe('render', () => {
  const tokens = new Map([
    [A, { data: { number: '4242424242424242', expiration_month: 3, expiration_year: 2027 }, token: { id: A, type: 'card', data: { number: '4242424242424242' } } }],
    [B, { data: null, token: { id: B } }],
  ]);
  const scope: Scope = { tokens };

  it('keeps the JSON type of a lone tag and interpolates otherwise', () => {
    const rows: [source: string, expected: unknown][] = [
      [`{{ ${A} }}`, tokens.get(A)!.data],
      [` \n{{ ${A} | json: '$.expiration_month' }}\t `, 3],
      [`{{ ${A} | json: '$.expiration_month' }}!`, '3!'],
      [`{{ ${B} }}`, null],
      [`[{{ ${B} }}]`, '[]'],
      [`{{ ${A} | json: '$.nope' }}`, null],
      [`x{{ ${A} | json: '$.nope' }}x`, 'xx'],
      [`{{ token: ${A} | json: '$.data' }} {{ ${A} | json: '$.expiration_year' }}`, '{"number":"4242424242424242"} 2027'],
    ];
    for (const [source, expected] of rows) assert.deepEqual(evaluate(source, 'detokenize', scope), expected, source);
  });

  it('returns the scope’s values themselves (no copy)', () => {
    assert.equal(evaluate(`{{ token: ${A} }}`, 'detokenize', scope), tokens.get(A)!.token);
  });

  it('renders a parsed template many times against different scopes', () => {
    const t = parseTemplate('{{ data.number | reveal_last: 4 }}', 'template');
    assert.equal(render(t, { variables: { data: { number: '4111111111111111' } } }), 'XXXXXXXXXXXX1111');
    assert.equal(render(t, { variables: { data: { number: '5555' } } }), '5555');
    assert.equal(render(t, { variables: {} }), null);
    assert.equal(render(t, {}), null);
  });

  it('an id missing from the scope is an ExpressionError at the id', () => {
    for (const [source, s, position] of [
      ['{{ nope }}', scope, 3],
      [`{{ ${A} }} {{ token: nope }}`, scope, 53],
      ['{{ nope }}', {}, 3],
    ] as const) {
      assert.throws(
        () => evaluate(source, 'detokenize', s),
        (err: unknown) => err instanceof ExpressionError && err.message === `unknown token "nope" at ${position}` && err.position === position && err.expression === source,
      );
    }
  });

  it('evaluation errors never quote the value', () => {
    const secret = 'my-secret-value';
    for (const f of ['to_number', 'to_boolean', 'card_bin', 'alias_card', 'card_exp', "hmac: 'k'"]) {
      assert.throws(
        () => evaluate(`{{ v | ${f} }}`, 'template', { variables: { v: secret } }),
        (err: unknown) => err instanceof ExpressionError && !err.message.includes(secret) && !err.message.includes('secret'),
        f,
      );
    }
  });
});
