import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { Database } from '../../src/db/database.ts';
import { Notifier } from '../../src/db/notifications.ts';
import { createTestDatabase } from '../helpers/server.ts';

/**
 * The invalidation barrier (src/db/notifications.ts, docs/operations.md): after a change
 * commits, its writer's invalidateLocal resolves only once every other listening process
 * has read the change's notice. Two Notifiers with pools of their own stand for two
 * processes; the end-to-end check with real processes is in processes.test.ts.
 */

describe('the invalidation barrier', () => {
  let drop: () => Promise<void>;
  let url: string;
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, new Writable({ write(chunk, _enc, done) { warnings.push(JSON.parse(chunk.toString()).msg); done(); } }));
  const opened: { db: Database; notifier: Notifier }[] = [];

  async function member() {
    const db = new Database(url, 2, log);
    const notifier = new Notifier(url, db, log);
    await notifier.start();
    opened.push({ db, notifier });
    return { db, notifier };
  }

  const membersOf = (n: Notifier) => (n as unknown as { members: Map<string, number> }).members;
  async function until(check: () => boolean) {
    for (let i = 0; !check(); i++) {
      assert.ok(i < 100, 'condition not reached');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  before(async () => {
    const database = await createTestDatabase();
    url = database.url;
    drop = database.drop;
  });
  after(async () => {
    for (const { db, notifier } of opened) {
      await notifier.close();
      await db.close();
    }
    await drop?.();
  });

  it('resolves only after the other members have dropped their entries', async () => {
    const a = await member();
    const b = await member();
    const c = await member();
    await until(() => membersOf(a.notifier).size === 2);
    const seen: string[] = [];
    b.notifier.onInvalidate((topic) => topic === 'auth' && seen.push('b'));
    c.notifier.onInvalidate((topic) => topic === 'auth' && seen.push('c'));
    for (let i = 0; i < 20; i++) {
      seen.length = 0;
      await a.db.transaction((tx) => a.notifier.invalidate('auth', tx));
      await a.notifier.invalidateLocal('auth');
      assert.deepEqual(seen.sort(), ['b', 'c'], `round ${i}: a member had not read the notice yet`);
    }
    assert.deepEqual(warnings, []);
  });

  it('waits at most a second for a member that vanished without leaving, and not at all for one that left', async () => {
    const a = await member();
    await a.db.query(`SELECT pg_notify('coffer_invalidate', 'member:0123456789abcdef')`);
    await until(() => membersOf(a.notifier).has('0123456789abcdef'));
    let started = Date.now();
    await a.notifier.invalidateLocal('auth');
    const waited = Date.now() - started;
    assert.ok(waited >= 900 && waited < 3000, `waited ${waited} ms`);
    assert.ok(warnings.some((w) => /barrier timed out/.test(w)));

    await a.db.query(`SELECT pg_notify('coffer_invalidate', 'leave:0123456789abcdef')`);
    await until(() => !membersOf(a.notifier).has('0123456789abcdef'));
    const closing = opened.find((o) => o.notifier !== a.notifier)!;
    await closing.notifier.close(); // says goodbye
    opened.splice(opened.indexOf(closing), 1);
    await closing.db.close();
    await until(() => membersOf(a.notifier).size === opened.length - 1);
    started = Date.now();
    await a.notifier.invalidateLocal('auth');
    assert.ok(Date.now() - started < 500);
  });

  it('does not wait inside a transaction, whose notices go out only at its commit', async () => {
    const a = opened[0];
    const started = Date.now();
    await a.db.transaction(async (tx) => {
      await a.notifier.invalidate('auth', tx);
      await a.notifier.invalidateLocal('auth');
    });
    assert.ok(Date.now() - started < 500);
  });
});
