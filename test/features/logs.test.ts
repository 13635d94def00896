import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { call, createApplication, createOtherTenant } from '../helpers/http.ts';
import { assertAuthCases } from '../helpers/security.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

type Event = {
  id: string;
  tenant_id: string;
  actor_id: string | null;
  actor_type: string | null;
  entity_type: string;
  entity_id: string | null;
  operation: string;
  message: string;
  created_at: string;
};

describe('audit logs', () => {
  let server: TestServer;
  let other: { tenant_id: string; api_key: string };
  const created: { id: string; name: string }[] = [];
  let managerId: string;

  /** Follows `next` from the first page to the last, checking every page's shape on the way. */
  async function allPages(query: string, size: number, key = server.key): Promise<{ events: Event[]; pages: number }> {
    const events: Event[] = [];
    let pages = 0;
    let next: string | undefined;
    do {
      const sep = query ? '&' : '';
      const res = await call(server, 'GET', `/logs?${query}${sep}size=${size}${next ? `&start=${encodeURIComponent(next)}` : ''}`, { key });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.body.pagination.page_size, size);
      assert.ok(res.body.data.length <= size);
      next = res.body.pagination.next;
      if (next !== undefined) assert.equal(res.body.data.length, size, 'only the last page may be short');
      events.push(...res.body.data);
      pages++;
      assert.ok(pages < 1000, 'pagination does not end');
    } while (next !== undefined);
    return { events, pages };
  }

  before(async () => {
    server = await startTestServer();
    const manager = await call(server, 'GET', '/applications/key', { key: server.key });
    managerId = manager.body.id;
    // Requests a few milliseconds apart, so "newest first" is observable across them.
    for (let i = 0; i < 7; i++) {
      const app = await createApplication(server, { name: `logged ${i}`, type: 'private', permissions: ['token:read'] });
      created.push({ id: app.id, name: `logged ${i}` });
      await sleep(3);
    }
    other = await createOtherTenant(server);
    await createApplication(server, { name: 'theirs', type: 'private', permissions: ['token:read'] }, other.api_key);
  });
  after(() => server.stop());

  it('lists the tenant\'s events newest first with cursor pagination', async () => {
    const res = await call(server, 'GET', '/logs', { key: server.key });
    assert.equal(res.status, 200);
    assert.deepEqual(Object.keys(res.body).sort(), ['data', 'pagination']);
    assert.equal(res.body.pagination.page_size, 20);
    const data = res.body.data as Event[];
    assert.ok(data.length > 0 && data.length <= 20);
    for (const e of data) {
      assert.equal(e.tenant_id, server.tenantId);
      assert.match(e.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.ok(!Number.isNaN(Date.parse(e.created_at)));
      assert.equal(typeof e.message, 'string');
    }
    const creates = data.filter((e) => e.entity_type === 'application' && e.operation === 'create');
    // Created in order 0..6, so listed 6..0.
    assert.deepEqual(
      creates.filter((e) => created.some((c) => c.id === e.entity_id)).map((e) => e.entity_id),
      [...created].reverse().map((c) => c.id),
    );
    const mine = creates.find((e) => e.entity_id === created[0].id)!;
    assert.equal(mine.actor_id, managerId);
    assert.equal(mine.actor_type, 'application');
    for (let i = 1; i < data.length; i++) assert.ok(data[i - 1].created_at >= data[i].created_at, 'newest first');
  });

  it('pages through every event exactly once by following next', async () => {
    const everything = await allPages('', 100);
    assert.equal(everything.pages, 1);
    const total = everything.events.length;
    assert.ok(total >= 16, `only ${total} events`);

    for (const size of [1, 3, total, total - 1]) {
      const paged = await allPages('', size);
      assert.deepEqual(paged.events.map((e) => e.id), everything.events.map((e) => e.id), `size ${size}`);
      assert.equal(paged.pages, Math.ceil(total / size), `size ${size}`);
    }
    const exact = await call(server, 'GET', `/logs?size=${total}`, { key: server.key });
    assert.equal(exact.body.pagination.next, undefined, 'no next page when the page ends at the last event');
    const ids = new Set(everything.events.map((e) => e.id));
    assert.equal(ids.size, total);
    const sorted = [...everything.events].sort((a, b) => (a.id < b.id ? 1 : -1));
    assert.deepEqual(everything.events, sorted);
  });

  it('keeps a cursor stable while new events arrive', async () => {
    const first = await call(server, 'GET', '/logs?size=2', { key: server.key });
    const secondBefore = await call(server, 'GET', `/logs?size=2&start=${encodeURIComponent(first.body.pagination.next)}`, { key: server.key });
    await createApplication(server, { name: 'arrives meanwhile', type: 'private', permissions: ['token:read'] });
    const secondAfter = await call(server, 'GET', `/logs?size=2&start=${encodeURIComponent(first.body.pagination.next)}`, { key: server.key });
    assert.deepEqual(secondAfter.body.data, secondBefore.body.data);
  });

  it('filters by entity_type and entity_id', async () => {
    const apps = await allPages('entity_type=application', 5);
    assert.ok(apps.events.length >= created.length);
    assert.ok(apps.events.every((e) => e.entity_type === 'application'));
    const keys = await allPages('entity_type=application_key', 5);
    assert.ok(keys.events.length >= created.length);
    assert.ok(keys.events.every((e) => e.entity_type === 'application_key'));

    const target = created[3].id;
    const one = await call(server, 'GET', `/logs?entity_type=application&entity_id=${target}`, { key: server.key });
    assert.equal(one.status, 200);
    assert.equal(one.body.data.length, 1);
    assert.equal(one.body.data[0].entity_id, target);
    assert.equal(one.body.data[0].operation, 'create');

    const byId = await call(server, 'GET', `/logs?entity_id=${target}`, { key: server.key });
    assert.deepEqual(byId.body.data.map((e: Event) => e.entity_id), [target]);

    const none = await call(server, 'GET', `/logs?entity_type=session&entity_id=${target}`, { key: server.key });
    assert.deepEqual(none.body.data, []);
    assert.equal(none.body.pagination.next, undefined);
  });

  it('filters by start_date and end_date, inclusive', async () => {
    const { events } = await allPages('', 100);
    const oldestFirst = [...events].reverse();
    const pivot = oldestFirst.find((e) => e.entity_id === created[4].id)!;
    const pivotTime = pivot.created_at;

    const from = await allPages(`start_date=${encodeURIComponent(pivotTime)}`, 100);
    assert.ok(from.events.some((e) => e.id === pivot.id));
    assert.ok(from.events.every((e) => e.created_at >= pivotTime));
    assert.equal(from.events.length, events.filter((e) => e.created_at >= pivotTime).length);

    const until = await allPages(`end_date=${encodeURIComponent(pivotTime)}`, 100);
    assert.ok(until.events.some((e) => e.id === pivot.id));
    assert.ok(until.events.every((e) => e.created_at <= pivotTime));
    assert.equal(until.events.length, events.filter((e) => e.created_at <= pivotTime).length);

    const exactly = await allPages(`start_date=${encodeURIComponent(pivotTime)}&end_date=${encodeURIComponent(pivotTime)}`, 100);
    assert.ok(exactly.events.length >= 1);
    assert.ok(exactly.events.every((e) => e.created_at === pivotTime));

    const future = new Date(Date.now() + 3600_000).toISOString();
    assert.deepEqual((await allPages(`start_date=${encodeURIComponent(future)}`, 100)).events, []);

    // Other offsets and precisions name the same instants.
    const shifted = new Date(Date.parse(pivotTime)).toISOString().replace('Z', '+00:00');
    const sameFrom = await allPages(`start_date=${encodeURIComponent(shifted)}`, 100);
    assert.equal(sameFrom.events.length, from.events.length);
  });

  it('takes the widest date filters as instants: year 0001 to 9999, any offset within them', async () => {
    const all = await call(server, 'GET', `/logs?start_date=0001-01-01T00:00:00Z&end_date=${encodeURIComponent('9999-12-31T23:59:59.999Z')}&size=1`, { key: server.key });
    assert.equal(all.status, 200, all.text);
    assert.equal(all.body.data.length, 1);
    // PostgreSQL itself refuses offsets beyond ±15:59; the instant they name is what counts.
    const offset = await call(server, 'GET', `/logs?start_date=${encodeURIComponent('2000-01-01T00:00:00+20:00')}&size=1`, { key: server.key });
    assert.equal(offset.status, 200, offset.text);
    assert.equal(offset.body.data.length, 1);
  });

  it('compares start_date and end_date as instants, not as text', async () => {
    // 00:00 in UTC+05:00 is 19:00 UTC the day before: start is before end although its text sorts after.
    const ok = await call(server, 'GET', `/logs?start_date=${encodeURIComponent('2024-01-02T00:00:00+05:00')}&end_date=${encodeURIComponent('2024-01-01T20:00:00Z')}`, { key: server.key });
    assert.equal(ok.status, 200, ok.text);
    const fraction = await call(server, 'GET', `/logs?start_date=${encodeURIComponent('2024-01-01T00:00:00Z')}&end_date=${encodeURIComponent('2024-01-01T00:00:00.500Z')}`, { key: server.key });
    assert.equal(fraction.status, 200, fraction.text);
    // And the reverse: text that sorts before, instant that is after.
    const bad = await call(server, 'GET', `/logs?start_date=${encodeURIComponent('2024-01-01T20:00:00Z')}&end_date=${encodeURIComponent('2024-01-02T00:00:00+05:00')}`, { key: server.key });
    assert.equal(bad.status, 400, bad.text);
    assert.ok(bad.body.errors['query.end_date']);
  });

  it('rejects bad queries with 400 and field paths', async () => {
    const cases: [string, string][] = [
      ['start_date=2024-02-01T00:00:00Z&end_date=2024-01-01T00:00:00Z', 'query.end_date'],
      ['start_date=yesterday', 'query.start_date'],
      ['end_date=2024-13-01T00:00:00Z', 'query.end_date'],
      // Well-formed date-times outside the years 0001 to 9999 (PostgreSQL has no year 0; an offset can reach 10000).
      ['start_date=0000-01-01T00:00:00Z', 'query.start_date'],
      ['end_date=0000-06-01T00:00:00Z', 'query.end_date'],
      ['end_date=9999-12-31T23:59:59-23:59', 'query.end_date'],
      ['start=not-a-cursor', 'query.start'],
      ['start=', 'query.start'],
      [`start=${Buffer.from(JSON.stringify({ id: 'x' })).toString('base64url')}`, 'query.start'],
      [`start=${Buffer.from(JSON.stringify({ id: '-'.repeat(36) })).toString('base64url')}`, 'query.start'],
      [`start=${Buffer.from(JSON.stringify({ id: 'a'.repeat(36) })).toString('base64url')}`, 'query.start'],
      [`start=${Buffer.from(JSON.stringify({ id: 7 })).toString('base64url')}`, 'query.start'],
      [`start=${Buffer.from('null').toString('base64url')}`, 'query.start'],
      ['size=0', 'query.size'],
      ['size=101', 'query.size'],
      ['size=-1', 'query.size'],
      ['size=ten', 'query.size'],
      ['size=1.5', 'query.size'],
      [`entity_type=${'x'.repeat(101)}`, 'query.entity_type'],
      ['entity_id=', 'query.entity_id'],
    ];
    for (const [query, field] of cases) {
      const res = await call(server, 'GET', `/logs?${query}`, { key: server.key });
      assert.equal(res.status, 400, `${query}: ${res.text}`);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.ok(res.body.errors?.[field], `${query}: expected ${field}, got ${JSON.stringify(res.body.errors)}`);
    }
    assert.equal((await call(server, 'GET', '/logs?size=100', { key: server.key })).status, 200);
    assert.equal((await call(server, 'GET', '/logs?size=1', { key: server.key })).status, 200);
  });

  it('never shows another tenant\'s events, not even by id', async () => {
    const theirs = await allPages('', 100, other.api_key);
    assert.ok(theirs.events.length > 0);
    assert.ok(theirs.events.every((e) => e.tenant_id === other.tenant_id));
    const ours = await allPages('', 100);
    assert.ok(ours.events.every((e) => e.tenant_id === server.tenantId));
    const theirIds = new Set(theirs.events.map((e) => e.id));
    assert.ok(ours.events.every((e) => !theirIds.has(e.id)));

    const theirApp = theirs.events.find((e) => e.entity_type === 'application')!;
    const byId = await call(server, 'GET', `/logs?entity_id=${theirApp.entity_id}`, { key: server.key });
    assert.deepEqual(byId.body.data, []);
    // Their cursor, used by us, pages through our events only.
    const theirFirst = await call(server, 'GET', '/logs?size=1', { key: other.api_key });
    const mixed = await call(server, 'GET', `/logs?size=100&start=${encodeURIComponent(theirFirst.body.pagination.next)}`, { key: server.key });
    assert.equal(mixed.status, 200);
    assert.ok(mixed.body.data.every((e: Event) => e.tenant_id === server.tenantId));
  });

  it('records who did it: application keys, sessions and the system', async () => {
    const pub = await createApplication(server, { name: 'logs browser', type: 'public', permissions: ['token:create'] });
    const session = await call(server, 'POST', '/sessions', { key: pub.key });
    rememberSecret(session.body.session_key, session.body.nonce);
    const res = await call(server, 'GET', '/logs?entity_type=session&size=1', { key: server.key });
    assert.equal(res.body.data[0].actor_id, pub.id);
    assert.equal(res.body.data[0].actor_type, 'application');
    // The tenant's set-up was done by the system.
    const setup = await call(server, 'GET', '/logs?entity_type=tenant', { key: other.api_key });
    assert.equal(setup.body.data.length, 1);
    assert.equal(setup.body.data[0].entity_id, other.tenant_id);
    assert.equal(setup.body.data[0].actor_type, 'system');
    assert.equal(setup.body.data[0].actor_id, null);
  });

  it('GET /logs/entity-types lists every entity type events name', async () => {
    const res = await call(server, 'GET', '/logs/entity-types', { key: server.key });
    assert.equal(res.status, 200);
    assert.ok(Array.isArray(res.body));
    assert.ok(res.body.every((t: unknown) => typeof t === 'string'));
    assert.equal(new Set(res.body).size, res.body.length);
    const { events } = await allPages('', 100);
    for (const type of new Set(events.map((e) => e.entity_type))) assert.ok(res.body.includes(type), `${type} missing`);
  });

  it('needs a management key with log:read', async () => {
    await assertAuthCases(server, { method: 'GET', path: '/logs', permissions: ['log:read'], type: 'management' });
    await assertAuthCases(server, { method: 'GET', path: '/logs/entity-types', permissions: ['log:read'], type: 'management' });
    const priv = await createApplication(server, { name: 'private reader', type: 'private', permissions: ['token:read'] });
    assert.equal((await call(server, 'GET', '/logs', { key: priv.key })).status, 403);
    assert.equal((await call(server, 'GET', '/logs/entity-types', { key: priv.key })).status, 403);
  });
});
