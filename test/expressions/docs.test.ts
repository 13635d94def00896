import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { FILTERS } from '../../src/expressions/filters.ts';
import { evaluate, ExpressionError } from '../../src/expressions/index.ts';

const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/expressions.md'), 'utf8');

describe('docs/expressions.md', () => {
  it('documents every filter under its own heading', () => {
    const headings = doc.split('\n').filter((l) => l.startsWith('### `'));
    for (const name of FILTERS.keys()) {
      assert.ok(headings.some((h) => h.includes(`\`${name}\``) || h.includes(`\`${name}:`) || h.includes(`\`${name}[`)), `no heading for ${name}`);
    }
  });

  it('shows the errors the code gives', () => {
    const rows: [source: string, value: unknown, message: string][] = [
      ['text {{ data', null, "unterminated '{{' at 5"],
      ['💳💳 {{ data', null, "unterminated '{{' at 3"],
      ['{{ data.number | revael: 4 }}', null, 'unknown filter "revael" at 17'],
      ["{{ data.number | reveal_last: 'a' }}", null, 'expected a non-negative integer as argument 1 (n) of reveal_last at 30'],
      ['{{ data.number | reveal_last }}', null, 'reveal_last needs argument 1 (n) at 17'],
      ["{{ data | json: '$..a' }}", null, "invalid JSON path in argument 1 of json: recursive descent '..' is not supported (offset 1 of the path) at 16"],
      ['{{ data | to_number }}', 'abc', 'to_number: the value is not numeric (a string) at 10'],
    ];
    for (const [source, data, message] of rows) {
      assert.ok(doc.includes(message), `the doc lacks ${message}`);
      assert.throws(() => evaluate(source, 'template', { variables: { data } }), (err) => err instanceof ExpressionError && err.message === message);
    }
  });
});
