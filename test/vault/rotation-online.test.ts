import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { after, describe, it } from 'node:test';
import pg from 'pg';
import { Database } from '../../src/db/database.ts';
import { createLogger } from '../../src/logger.ts';
import type { Running } from '../../src/main.ts';
import { LocalKeyring } from '../../src/vault/keyring.ts';
import { Vault } from '../../src/vault/tenant-keys.ts';
import { runCli } from '../helpers/cli.ts';
import { call, createApplication } from '../helpers/http.ts';
import { createTestDatabase, queryOnce, rememberSecret, startOnDatabase } from '../helpers/server.ts';
import { until } from '../helpers/until.ts';

/**
 * `coffer rotate-keys` as docs/vault.md describes it: online, while the service runs, and
 * over every tenant key, the retired data keys included. rotation.test.ts and
 * cli/rotate-keys.test.ts rotate with the server stopped and no data key retired.
 */

const k1 = randomBytes(32).toString('base64');
const k2 = randomBytes(32).toString('base64');
const PAN = '4000056655665556';
const PAN_B = '6011111111111117';
const SSN = '123-45-6789';
rememberSecret(k1, k2, PAN, PAN_B, SSN);

const OLD = `old:${k1}`;
/** The new KEK first (it wraps), the old one after it (it still unwraps): as the other rotation tests. */
const BOTH = `new:${k2},old:${k1}`;
const NEW = `new:${k2}`;

const reveal = [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }];
const year = new Date().getUTCFullYear() + 3;

const startOn = (databaseUrl: string, cofferKeys: string) => startOnDatabase(databaseUrl, { DATABASE_POOL_SIZE: '10', WORKERS: '0', COFFER_KEYS: cofferKeys });

type KeyRow = { id: string; tenant_id: string; purpose: string; kek_id: string; active: boolean; sealed: string; rewrapped_at: Date | null };

const keyRows = (url: string): Promise<KeyRow[]> =>
  queryOnce<KeyRow>(url, 'SELECT id, tenant_id, purpose, kek_id, active, sealed::text, rewrapped_at FROM tenant_keys ORDER BY id');

type Tenant = { key: string; tokens: { id: string; data: unknown }[] };

async function createTenantApp(running: Running, apiKey: string, name: string): Promise<string> {
  const server = { url: running.url, key: apiKey } as Parameters<typeof createApplication>[0];
  return (await createApplication(server, { name, type: 'private', rules: reveal })).key;
}

async function createToken(url: string, t: Tenant, body: { type: string; data: unknown }): Promise<string> {
  const res = await call(url, 'POST', '/tokens', { key: t.key, body });
  assert.equal(res.status, 201, res.text);
  t.tokens.push({ id: res.body.id, data: body.data });
  return res.body.id;
}

/** Every token of `t` reads back its exact data, revealed. */
async function assertReadable(url: string, t: Tenant, what: string): Promise<void> {
  for (const { id, data } of t.tokens) {
    const res = await call(url, 'GET', `/tokens/${id}`, { key: t.key });
    assert.equal(res.status, 200, `${what}: token ${id}: ${res.text}`);
    assert.deepEqual(res.body.data, data, `${what}: token ${id}`);
  }
}

describe('rotate-keys online, and over retired data keys', () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const fn of cleanup.reverse()) await fn().catch(() => {});
  });

  it('re-wraps every tenant key while the server keeps serving reads and writes; then only the new KEK is needed', async () => {
    const database = await createTestDatabase();
    cleanup.push(() => database.drop());
    let running: Running | undefined = await startOn(database.url, OLD);
    cleanup.push(async () => running?.stop());
    const server = running;
    const management = running.firstKey!.api_key;
    rememberSecret(management);
    const a: Tenant = { key: await createTenantApp(running, management, 'a'), tokens: [] };
    const other = await running.services.tenants.initialize('B');
    rememberSecret(other.api_key);
    const b: Tenant = { key: await createTenantApp(running, other.api_key, 'b'), tokens: [] };
    await createToken(server.url, a, { type: 'card', data: { number: PAN, expiration_month: 6, expiration_year: year } });
    await createToken(server.url, a, { type: 'social_security_number', data: SSN });
    await createToken(server.url, b, { type: 'card_number', data: PAN_B });
    await createToken(server.url, b, { type: 'token', data: { note: 'before' } });
    const existing = { a: [...a.tokens], b: [...b.tokens] };

    const initial = await keyRows(database.url);
    assert.equal(initial.length, 4, 'a data and an index key for each of two tenants');
    assert.ok(initial.every((r) => r.kek_id === 'old'));

    // The loop: workers alternating a revealed GET of an existing token and a POST /tokens,
    // each request tagged with the phase of the rotation it started and ended in.
    type Phase = 'before' | 'rotating' | 'midway' | 'finishing' | 'after';
    type Outcome = { op: 'get' | 'post'; began: Phase; ended: Phase; status: number; failure?: string; tenant: Tenant; id?: string; data?: unknown };
    let phase: Phase = 'before';
    let stopLoop = false;
    const outcomes: Outcome[] = [];
    const worker = async (w: number) => {
      for (let i = 0; !stopLoop; i++) {
        const tenant = (w + i) % 2 === 0 ? a : b;
        const began = phase;
        if (i % 2 === 0) {
          const pick = (tenant === a ? existing.a : existing.b)[(i / 2) % 2];
          const res = await call(server.url, 'GET', `/tokens/${pick.id}`, { key: tenant.key }).catch((err: Error) => ({ status: 0, body: undefined, text: err.message }));
          let failure = res.status === 200 ? undefined : `GET ${res.status} ${res.text}`;
          if (!failure && !isDeepStrictEqual(res.body.data, pick.data)) failure = `GET ${pick.id} answered other data`;
          outcomes.push({ op: 'get', began, ended: phase, status: res.status, failure, tenant, id: pick.id });
        } else {
          const data = { worker: w, i, began };
          const body = { type: 'token', data };
          const res = await call(server.url, 'POST', '/tokens', { key: tenant.key, body }).catch((err: Error) => ({ status: 0, body: undefined, text: err.message }));
          const failure = res.status === 201 ? undefined : `POST ${res.status} ${res.text}`;
          outcomes.push({ op: 'post', began, ended: phase, status: res.status, failure, tenant, id: res.body?.id, data });
        }
      }
    };
    const within = (p: Phase) => outcomes.filter((o) => o.began === p && o.ended === p);
    const loop = Promise.all([0, 1, 2, 3].map(worker));
    const stopTheLoop = async () => {
      stopLoop = true;
      await loop;
    };
    cleanup.push(stopTheLoop);

    await until(() => within('before').filter((o) => o.op === 'post').length >= 10, 'requests before the rotation');

    // Hold the last key the rotation reaches (it walks them by id), so that the loop runs
    // for certain while some keys are re-wrapped and the rest are not yet. The lock is the
    // one rotate-keys' UPDATE takes; foreign-key checks (key share) pass it. A second
    // connection watches: pg_stat_activity stands still inside a transaction.
    const locker = new pg.Client({ connectionString: database.url });
    const watcher = new pg.Client({ connectionString: database.url });
    await Promise.all([locker.connect(), watcher.connect()]);
    let open = true;
    const endLocker = async () => {
      if (open) await Promise.all([locker.end(), watcher.end()]);
      open = false;
    };
    cleanup.push(endLocker);
    await locker.query('BEGIN');
    const held = (await locker.query('SELECT id FROM tenant_keys ORDER BY id DESC LIMIT 1 FOR NO KEY UPDATE')).rows[0].id as string;

    phase = 'rotating';
    const rotation = runCli(['rotate-keys'], { DATABASE_URL: database.url, COFFER_KEYS: BOTH });
    let ended: Awaited<typeof rotation> | undefined;
    void rotation.then((r) => (ended = r));
    await until(
      async () => {
        if (ended) throw new Error(`rotate-keys ended (${ended.code}) without waiting on the held key: ${ended.stderr}`);
        return (
          await watcher.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE tenant_keys SET kek_id%'`,
          )
        ).rows[0].n === 1;
      },
      'rotate-keys to wait on the held key',
    );
    const midway = (await watcher.query('SELECT id, kek_id FROM tenant_keys ORDER BY id')).rows as { id: string; kek_id: string }[];
    assert.deepEqual(
      midway.map((r) => r.kek_id),
      midway.map((r) => (r.id === held ? 'old' : 'new')),
      'midway: every key but the held one re-wrapped',
    );
    phase = 'midway';
    await until(() => within('midway').filter((o) => o.op === 'post').length >= 10 && within('midway').filter((o) => o.op === 'get').length >= 10, 'requests midway through the rotation');
    phase = 'finishing';
    await locker.query('COMMIT');
    await endLocker();

    const result = await rotation;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^Re-wrapped 4 tenant keys under key "new"\./);
    for (const k of [k1, k2]) assert.ok(!result.stdout.includes(k) && !result.stderr.includes(k), 'the CLI prints no KEK');

    phase = 'after';
    await until(() => within('after').filter((o) => o.op === 'post').length >= 10, 'requests after the rotation');
    await stopTheLoop();

    const failures = outcomes.filter((o) => o.failure);
    assert.deepEqual(failures.map((o) => `${o.began}→${o.ended}: ${o.failure}`), [], 'no request of the loop failed');
    assert.ok(outcomes.every((o) => o.status === (o.op === 'get' ? 200 : 201)));
    for (const o of outcomes) if (o.op === 'post') o.tenant.tokens.push({ id: o.id!, data: o.data });
    // One more of each, made after the rotation by the server that ran through it.
    await createToken(server.url, a, { type: 'token', data: { note: 'after' } });
    await createToken(server.url, b, { type: 'card_number', data: PAN });

    // The server that kept running reads back what it wrote before, during and after.
    await assertReadable(server.url, a, 'the running server');
    await assertReadable(server.url, b, 'the running server');

    const rotated = await keyRows(database.url);
    assert.deepEqual(rotated.map((r) => r.id), initial.map((r) => r.id), 'the same keys, none added by the running server');
    for (const r of rotated) {
      assert.equal(r.kek_id, 'new', `key ${r.purpose} of ${r.tenant_id}`);
      assert.ok(r.rewrapped_at instanceof Date);
    }

    // docs/operations.md: an instance that still has the old KEK first wraps the keys of a
    // tenant created there after rotate-keys with the old KEK. This server (keyring "old"
    // alone, as it started) does just that: rotate-keys cannot see it coming.
    const late = await running.services.tenants.initialize('Created after the rotation');
    rememberSecret(late.api_key);
    const c: Tenant = { key: await createTenantApp(running, late.api_key, 'c'), tokens: [] };
    await createToken(server.url, c, { type: 'social_security_number', data: SSN });
    const lateRows = (await keyRows(database.url)).filter((r) => r.tenant_id === late.tenant_id);
    assert.deepEqual(lateRows.map((r) => r.kek_id), ['old', 'old'], 'a tenant made after the rotation by a server with the old KEK first');

    await running.stop();
    running = undefined;

    // Removing the old KEK now is refused at start, naming it (vault.md), and changes nothing…
    await assert.rejects(startOn(database.url, NEW), /2 tenant keys are wrapped by KEK "old", which is not in the keyring \(COFFER_KEYS\)/);
    // … and rotate-keys, run again before the old KEK is removed (operations.md), finds exactly those.
    const again = await runCli(['rotate-keys'], { DATABASE_URL: database.url, COFFER_KEYS: BOTH });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /^Re-wrapped 2 tenant keys under key "new"\./);
    assert.ok((await keyRows(database.url)).every((r) => r.kek_id === 'new'));

    // With only the new KEK, everything made before, during and after the rotation opens.
    running = await startOn(database.url, NEW);
    await assertReadable(running.url, a, 'only the new KEK');
    await assertReadable(running.url, b, 'only the new KEK');
    await assertReadable(running.url, c, 'only the new KEK');
    await running.stop();
    running = undefined;
  });

  it('re-wraps a retired data key too: what it sealed opens with only the new KEK', async () => {
    const database = await createTestDatabase();
    cleanup.push(() => database.drop());
    let running: Running | undefined = await startOn(database.url, OLD);
    cleanup.push(async () => running?.stop());
    const management = running.firstKey!.api_key;
    const tenantId = running.firstKey!.tenant_id;
    rememberSecret(management);
    const t: Tenant = { key: await createTenantApp(running, management, 'retired'), tokens: [] };
    await createToken(running.url, t, { type: 'card', data: { number: PAN, expiration_month: 6, expiration_year: year } });
    await createToken(running.url, t, { type: 'social_security_number', data: SSN });
    await running.stop(); // reports the seals it counted
    running = undefined;
    const [retiring] = (await keyRows(database.url)).filter((r) => r.purpose === 'data');

    // The service's budget is 2^31 seals a key; a Vault of its own with a budget of 4 retires
    // the same key after a few more seals, as a busy service eventually would.
    const db = new Database(database.url, 2, createLogger('silent'));
    cleanup.push(() => db.close());
    const budget = new Vault(db, new LocalKeyring([{ id: 'old', key: Buffer.from(k1, 'base64') }]), { maxSealsPerKey: 4, reportEvery: 1000 });
    const sealed: { id: string; value: unknown; ciphertext: Buffer; dataKeyId: string }[] = [];
    const seal = async (id: string, value: unknown) => {
      sealed.push({ id, value, ...(await budget.encrypt(tenantId, id, value)) });
      await budget.close(); // the report, and a retirement once the budget is spent
    };
    for (let i = 0; i < 10 && (sealed.length === 0 || sealed.at(-1)!.dataKeyId === retiring.id); i++) await seal(`v-${i}`, { i, pan: PAN });
    const underRetired = sealed.filter((s) => s.dataKeyId === retiring.id);
    const underActive = sealed.filter((s) => s.dataKeyId !== retiring.id);
    assert.ok(underRetired.length >= 1 && underActive.length === 1, 'some values sealed under the first key, then one under its successor');
    await seal('v-last', { last: true });
    await budget.close();

    const before = await keyRows(database.url);
    const data = before.filter((r) => r.purpose === 'data');
    assert.equal(data.length, 2);
    assert.deepEqual(
      data.map((r) => ({ id: r.id, active: r.active })).sort((x, y) => Number(x.active) - Number(y.active)),
      [
        { id: retiring.id, active: false },
        { id: underActive[0].dataKeyId, active: true },
      ],
      'the first data key retired, the new one active',
    );
    assert.ok(Number(data.find((r) => !r.active)!.sealed) >= 4, 'retired for its spent budget');
    const tokenKeys = (await queryOnce(database.url, 'SELECT DISTINCT data_key_id FROM tokens')).map((r) => r.data_key_id);
    assert.deepEqual(tokenKeys, [retiring.id], 'the tokens are sealed under the retired key');
    assert.ok(before.every((r) => r.kek_id === 'old'));

    const result = await runCli(['rotate-keys'], { DATABASE_URL: database.url, COFFER_KEYS: BOTH });
    assert.equal(result.code, 0, result.stderr);

    const rotated = await keyRows(database.url);
    const retired = rotated.find((r) => r.id === retiring.id)!;
    assert.equal(retired.active, false);
    assert.equal(retired.kek_id, 'new', 'the retired data key is wrapped by the new KEK');
    assert.ok(retired.rewrapped_at instanceof Date);
    assert.deepEqual(rotated.map((r) => r.kek_id), ['new', 'new', 'new']);
    assert.match(result.stdout, /^Re-wrapped 3 tenant keys under key "new"\./, 'the retired and the active data key, and the index key');

    // Only the new KEK: a fresh vault (nothing cached) opens everything, the retired key's values first.
    const onlyNew = new Vault(db, new LocalKeyring([{ id: 'new', key: Buffer.from(k2, 'base64') }]));
    await onlyNew.checkKeyring();
    for (const s of [...underRetired, ...sealed.filter((s) => s.dataKeyId !== retiring.id)]) {
      assert.deepEqual(await onlyNew.decrypt(tenantId, s.id, s.ciphertext, s.dataKeyId), s.value, `value ${s.id}`);
    }
    await onlyNew.close();

    // And the service, started with only the new KEK, reveals the tokens under the retired key.
    running = await startOn(database.url, NEW);
    await assertReadable(running.url, t, 'only the new KEK');
    await createToken(running.url, t, { type: 'token', data: { note: 'under the active key' } });
    await assertReadable(running.url, t, 'only the new KEK');
    await running.stop();
    running = undefined;
  });
});
