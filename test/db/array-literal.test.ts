import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { arrayLiteral } from '../../src/db/array-literal.ts';
import { suiteDatabase } from '../helpers/server.ts';

/** What the group-commit INSERTs send as array parameters must reach PostgreSQL element for element. */
describe('arrayLiteral', () => {
  const fresh = suiteDatabase(2, { migrated: false });

  const roundTrip = async (values: (string | null)[]) =>
    (await fresh.db.query<{ a: (string | null)[] }>('SELECT $1::text[] AS a', [arrayLiteral(values)]))[0].a;

  it('keeps the elements that look like array syntax, NULL or nothing', async () => {
    const tricky = ['', ' ', ' padded ', 'NULL', 'null', 'a,b', '{x}', '}', '{', 'say "hi"', 'back\\slash', '\\"', '"', '\\', 'line\nbreak', 'tab\t', 'é ☃ 𝄞'];
    assert.deepEqual(await roundTrip(tricky), tricky);
    assert.deepEqual(await roundTrip([null, 'x', null]), [null, 'x', null]);
    assert.deepEqual(await roundTrip([]), []);
  });

  it('sends what pg itself would for any strings', async () => {
    // Text PostgreSQL can store: no U+0000 (refused before any query) and no lone surrogates.
    const storable = fc.string({ unit: 'grapheme', maxLength: 20 }).filter((s) => !s.includes('\u0000'));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.option(storable, { nil: null }), { maxLength: 8 }), async (values) => {
        assert.deepEqual(await roundTrip(values), values);
      }),
      { numRuns: 200 },
    );
  });

  it('passes timestamps and JSON documents as the typed arrays the INSERTs cast them to', async () => {
    const at = new Date('2026-11-27T09:30:00.123Z');
    const [row] = await fresh.db.query<{ t: Date[]; j: unknown[] }>('SELECT $1::timestamptz[] AS t, $2::jsonb[] AS j', [
      arrayLiteral([at.toISOString()]),
      arrayLiteral([JSON.stringify({ id: 'a"b', path: 'c\\d', list: [1, 2] })]),
    ]);
    assert.equal(row.t[0].getTime(), at.getTime());
    assert.deepEqual(row.j, [{ id: 'a"b', path: 'c\\d', list: [1, 2] }]);
  });
});
