import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { OUTCOME_TABLE } from '../../src/processors/coffer-test/table.ts';
import { ERROR_CODES } from '../../src/processors/error-codes.ts';

/** docs/orchestration.md prints the test processor's table and the error_code vocabulary: they must not drift from the code. */
const doc = fs.readFileSync(path.resolve(import.meta.dirname, '../../docs/orchestration.md'), 'utf8');
const rows = doc.split('\n').filter((line) => line.startsWith('| '));

describe('docs/orchestration.md matches the code', () => {
  it('prints every row of the test processor\'s table, as it is', () => {
    const printed = rows.filter((line) => /^\| (amount|amounts|card) /.test(line));
    assert.equal(printed.length, OUTCOME_TABLE.length);
    OUTCOME_TABLE.forEach((row, i) => {
      const cells = printed[i].split('|').slice(1, -1).map((c) => c.trim());
      const key = 'amount' in row.key ? `amount ${row.key.amount}` : 'card' in row.key ? `card ${row.key.card}` : `amounts ${row.key.amounts[0]}–${row.key.amounts[1]}`;
      assert.equal(cells[0], key);
      assert.equal(cells[1], row.operation, key);
      assert.ok(cells[2].startsWith(row.outcome), key);
      assert.equal(cells[3], row.error_code ? `\`${row.error_code}\`` : '', key);
      assert.equal(cells[4], row.auth_response_code ?? '', key);
      assert.equal(cells[6], row.note, key);
    });
  });

  it('lists every error_code with its category', () => {
    for (const [code, info] of Object.entries(ERROR_CODES)) {
      const line = rows.find((l) => l.startsWith(`| \`${code}\` |`));
      assert.ok(line, code);
      assert.ok(line.includes(`| ${info.category} |`), code);
    }
  });
});
