import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Database } from '../../src/db/database.ts';
import { GroupCommit, type Table } from '../../src/db/group-commit.ts';
import { createLogger } from '../../src/logger.ts';
import { createTestDatabase } from '../helpers/server.ts';

const log = createLogger('silent');

describe('GroupCommit', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: Database;
  let gc: GroupCommit;
  /** The row count of each INSERT built, in the order built. */
  const inserts: { table: string; rows: number }[] = [];
  let notes: Table<{ id: string; body: string }>;
  let tags: Table<{ note_id: string; tag: string }>;

  before(async () => {
    database = await createTestDatabase();
    db = new Database(database.url, 5, log);
    await db.query(`CREATE TABLE notes (id text PRIMARY KEY, body text NOT NULL CHECK (body <> 'bad'))`);
    await db.query(`CREATE TABLE tags (note_id text NOT NULL, tag text NOT NULL)`);
    // Written by the follow-up of each note: one row per note, made from the note's CTE.
    await db.query(`CREATE TABLE audit (note_id text NOT NULL, xid text NOT NULL)`);
    gc = new GroupCommit(db);
    notes = gc.table<{ id: string; body: string }, { id: string; xid: string }>('notes', {
      insert(rows) {
        inserts.push({ table: 'notes', rows: rows.length });
        return {
          sql: `INSERT INTO notes (id, body) SELECT * FROM unnest($1::text[], $2::text[]) RETURNING id, txid_current()::text AS xid`,
          params: [rows.map((r) => r.id), rows.map((r) => r.body)],
        };
      },
      results: (rows, returned) => rows.map((r) => returned.find((x) => x.id === r.id) as { id: string; xid: string }),
      follow: (cte) => ({ sql: `INSERT INTO audit SELECT id, xid FROM ${cte} WHERE $1::boolean`, params: [true] }),
    });
    tags = gc.table<{ note_id: string; tag: string }>('tags', {
      insert(rows) {
        inserts.push({ table: 'tags', rows: rows.length });
        return { sql: `INSERT INTO tags SELECT * FROM unnest($1::text[], $2::text[])`, params: [rows.map((r) => r.note_id), rows.map((r) => r.tag)] };
      },
    });
  });
  after(async () => {
    await db.close();
    await database.drop();
  });

  const count = async (sql: string, params: unknown[] = []) => (await db.one<{ n: number }>(sql, params))!.n;

  it('writes concurrent writes as one statement, one INSERT per table, and answers each with its own rows', async () => {
    inserts.length = 0;
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const results = await Promise.all(ids.map((id) => gc.write([notes.of({ id, body: `note ${id}` }), tags.of({ note_id: id, tag: 'a' })])));
    results.forEach((r, i) => {
      assert.equal((r[0] as { id: string }).id, ids[i]);
      assert.equal(r[1], undefined, 'a table without results gives undefined');
    });
    assert.deepEqual(inserts, [{ table: 'notes', rows: 20 }, { table: 'tags', rows: 20 }]);
    assert.equal(new Set(results.map((r) => (r[0] as { xid: string }).xid)).size, 1, 'one transaction');
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = ANY($1)`, [ids]), 20);
    assert.equal(await count(`SELECT count(*) AS n FROM audit WHERE note_id = ANY($1)`, [ids]), 20, 'the follow-up ran on the inserted rows');
  });

  it('a bad write fails alone and leaves nothing behind, while the others in its batch commit whole', async () => {
    const good = [randomUUID(), randomUUID()];
    const bad = randomUUID();
    const settled = await Promise.allSettled([
      gc.write([notes.of({ id: good[0], body: 'fine' }), tags.of({ note_id: good[0], tag: 'x' })]),
      gc.write([tags.of({ note_id: bad, tag: 'orphan' }), notes.of({ id: bad, body: 'bad' })]),
      gc.write([notes.of({ id: good[1], body: 'fine' }), tags.of({ note_id: good[1], tag: 'x' })]),
    ]);
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'rejected', 'fulfilled']);
    assert.match(String((settled[1] as PromiseRejectedResult).reason), /notes_body_check/);
    assert.equal(await count(`SELECT count(*) AS n FROM notes WHERE id = ANY($1)`, [[...good, bad]]), 2);
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [bad]), 0, "the bad write's other rows rolled back with it");
    assert.equal(await count(`SELECT count(*) AS n FROM audit WHERE note_id = $1`, [bad]), 0);
  });

  it('a batch whose connection is lost after it was sent is not written again: each write gets the error, and the next batch works', async () => {
    // The statement committed, but the reply never came (a database restart at that instant):
    // retrying its writes would write their rows a second time.
    const real = db.query.bind(db);
    let lose = true;
    db.query = (async (sql: string, params?: unknown[], tx?: never) => {
      const rows = await real(sql, params, tx);
      if (lose && sql.startsWith('WITH')) {
        lose = false;
        throw new Error('Connection terminated unexpectedly');
      }
      return rows;
    }) as typeof db.query;
    try {
      const ids = [randomUUID(), randomUUID(), randomUUID()];
      const settled = await Promise.allSettled(ids.map((id) => gc.write([tags.of({ note_id: id, tag: 'once' })])));
      assert.deepEqual(settled.map((s) => s.status), ['rejected', 'rejected', 'rejected']);
      settled.forEach((s) => assert.match(String((s as PromiseRejectedResult).reason), /Connection terminated/));
      assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = ANY($1)`, [ids]), 3, 'each row once');
      const next = randomUUID();
      await gc.write([tags.of({ note_id: next, tag: 'after' })]);
      assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [next]), 1);
    } finally {
      db.query = real;
    }
  });

  it('a batch whose connection the database ends (a restart) fails every write, none hangs, and the next batch works', async () => {
    const own = new GroupCommit(db);
    const slow = own.table<{ note_id: string }>('tags', {
      insert: (rows) => ({ sql: `INSERT INTO tags SELECT note_id, 'slow' FROM unnest($1::text[]) AS t (note_id), pg_sleep(0.3)`, params: [rows.map((r) => r.note_id)] }),
    });
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const writes = Promise.allSettled(ids.map((id) => own.write([slow.of({ note_id: id })])));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await db.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(0.3)%' AND pid <> pg_backend_pid()`);
    const settled = await writes;
    assert.deepEqual(settled.map((s) => s.status), ['rejected', 'rejected', 'rejected']);
    settled.forEach((s) => assert.equal((s as PromiseRejectedResult).reason.code, '57P01'));
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = ANY($1)`, [ids]), 0);
    const next = randomUUID();
    await own.write([slow.of({ note_id: next })]);
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [next]), 1);
  });

  it('an error after the statement committed (reading its results) fails the writes without writing them again', async () => {
    const own = new GroupCommit(db);
    const broken = own.table<{ id: string; body: string }, string>('notes', {
      insert: (rows) => ({ sql: `INSERT INTO notes (id, body) SELECT * FROM unnest($1::text[], $2::text[]) RETURNING id`, params: [rows.map((r) => r.id), rows.map((r) => r.body)] }),
      results: () => {
        throw new Error('results do not match');
      },
    });
    const ownTags = own.table<{ note_id: string; tag: string }>('tags', {
      insert: (rows) => ({ sql: `INSERT INTO tags SELECT * FROM unnest($1::text[], $2::text[])`, params: [rows.map((r) => r.note_id), rows.map((r) => r.tag)] }),
    });
    const ids = [randomUUID(), randomUUID()];
    const settled = await Promise.allSettled([
      own.write([broken.of({ id: ids[0], body: 'x' })]),
      own.write([ownTags.of({ note_id: ids[1], tag: 'once' })]),
    ]);
    assert.match(String((settled[0] as PromiseRejectedResult).reason), /results do not match/);
    assert.equal(await count(`SELECT count(*) AS n FROM notes WHERE id = $1`, [ids[0]]), 1);
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [ids[1]]), 1, 'written once');
  });

  it('bounds a batch by its bytes: large writes go out in several statements, one larger than the bound alone', async () => {
    inserts.length = 0;
    const mib = 'x'.repeat(1024 * 1024);
    const sizes = [3, 3, 3, 3, 3, 3, 20, 1];
    const ids = sizes.map(() => randomUUID());
    await Promise.all(ids.map((id, i) => gc.write([notes.of({ id, body: mib.repeat(sizes[i]) })])));
    const rows = inserts.map((x) => x.rows);
    assert.equal(rows.reduce((a, b) => a + b, 0), sizes.length);
    // At most 16 MiB a statement: five of 3 MiB, then each of the rest on its own.
    assert.deepEqual(rows, [5, 1, 1, 1]);
    assert.equal(await count(`SELECT count(*) AS n FROM notes WHERE id = ANY($1) AND length(body) > 0`, [ids]), sizes.length);
    await db.query(`DELETE FROM notes WHERE id = ANY($1)`, [ids]);
  });

  it('reports each statement to its observer: the writes it carried, its time and its outcome, retries included', async () => {
    const seen: { writes: number; seconds: number; ok: boolean }[] = [];
    const own = new GroupCommit(db, { observe: (statement) => seen.push(statement) });
    const ownNotes = own.table<{ id: string; body: string }>('notes', {
      insert: (rows) => ({ sql: `INSERT INTO notes (id, body) SELECT * FROM unnest($1::text[], $2::text[])`, params: [rows.map((r) => r.id), rows.map((r) => r.body)] }),
    });
    await Promise.all(Array.from({ length: 6 }, () => own.write([ownNotes.of({ id: randomUUID(), body: 'fine' })])));
    assert.deepEqual(seen.map((s) => [s.writes, s.ok]), [[6, true]], 'six concurrent writes, one statement');
    assert.ok(seen[0].seconds > 0 && seen[0].seconds < 10, `a time in seconds (${seen[0].seconds})`);

    // One bad write among four: the statement fails, then its halves are retried down to the bad write alone.
    seen.length = 0;
    const bodies = ['fine', 'fine', 'bad', 'fine'];
    const settled = await Promise.allSettled(bodies.map((body) => own.write([ownNotes.of({ id: randomUUID(), body })])));
    assert.deepEqual(settled.map((s) => s.status), ['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    assert.deepEqual(seen.map((s) => [s.writes, s.ok]), [[4, false], [2, true], [2, false], [1, false], [1, true]]);
    // Writes in a transaction are not group commits: nothing to report.
    seen.length = 0;
    await db.transaction((tx) => own.write([ownNotes.of({ id: randomUUID(), body: 'fine' })], tx));
    assert.deepEqual(seen, []);
  });

  it('an observer that throws changes no outcome', async () => {
    const own = new GroupCommit(db, { observe: () => { throw new Error('observer failed'); } });
    const ownTags = own.table<{ note_id: string; tag: string }>('tags', {
      insert: (rows) => ({ sql: `INSERT INTO tags SELECT * FROM unnest($1::text[], $2::text[])`, params: [rows.map((r) => r.note_id), rows.map((r) => r.tag)] }),
    });
    const id = randomUUID();
    await own.write([ownTags.of({ note_id: id, tag: 'observed' })]);
    assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [id]), 1);
  });

  it('counts the writes waiting for the next statement while one is in flight', async () => {
    const own = new GroupCommit(db);
    const slow = own.table<{ note_id: string }>('tags', {
      insert: (rows) => ({ sql: `INSERT INTO tags SELECT note_id, 'queued' FROM unnest($1::text[]) AS t (note_id), pg_sleep(0.2)`, params: [rows.map((r) => r.note_id)] }),
    });
    const first = own.write([slow.of({ note_id: randomUUID() })]);
    assert.equal(own.queuedWrites, 1, 'waiting for the end of this turn of the event loop');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(own.queuedWrites, 0, 'the first statement is in flight');
    const later = [own.write([slow.of({ note_id: randomUUID() })]), own.write([slow.of({ note_id: randomUUID() })])];
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(own.queuedWrites, 2, 'they wait for the statement in flight');
    await Promise.all([first, ...later]);
    assert.equal(own.queuedWrites, 0);
  });

  it('inside an ambient transaction a write joins it, and rolls back with it', async () => {
    const id = randomUUID();
    await assert.rejects(db.transaction(async () => {
      await gc.write([notes.of({ id, body: 'joined' })]);
      assert.equal(await count(`SELECT count(*) AS n FROM notes WHERE id = $1`, [id]), 1, 'visible inside the transaction');
      throw new Error('the request failed');
    }), /the request failed/);
    assert.equal(await count(`SELECT count(*) AS n FROM notes WHERE id = $1`, [id]), 0);
    assert.equal(await count(`SELECT count(*) AS n FROM audit WHERE note_id = $1`, [id]), 0);
  });

  it('a write given its transaction joins that one', async () => {
    const id = randomUUID();
    await db.transaction(async (tx) => {
      const [row] = (await gc.write([notes.of({ id, body: 'given' })], tx)) as [{ xid: string }];
      const [{ xid: own }] = await db.query<{ xid: string }>(`SELECT txid_current()::text AS xid`, [], tx);
      assert.equal(row.xid, own);
    });
  });

  it('a write of no items writes nothing and succeeds, alone, in a batch, or in a transaction', async () => {
    assert.deepEqual(await gc.write([]), []);
    const id = randomUUID();
    const [none, one] = await Promise.all([gc.write([]), gc.write([tags.of({ note_id: id, tag: 'with an empty one' })])]);
    assert.deepEqual([none, one], [[], [undefined]]);
    await db.transaction(async (tx) => {
      assert.deepEqual(await gc.write([], tx), []);
      assert.equal(await count(`SELECT count(*) AS n FROM tags WHERE note_id = $1`, [id]), 1, 'the transaction is still usable');
    });
  });

  it('refuses an unregistered table, a table registered twice, and a second table with results', async () => {
    await assert.rejects(gc.write([{ table: 'nope', row: {} }]), /no table nope is registered/);
    assert.throws(() => gc.table('notes', { insert: () => ({ sql: '', params: [] }) }), /registered twice/);
    assert.throws(() => gc.table('more', { insert: () => ({ sql: '', params: [] }), results: () => [] }), /only one table may return results/);
  });
});
