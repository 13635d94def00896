import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findTokensByKeys, findUsedTokensByKeys } from '../../src/features/tokens/store.ts';
import { call, createApplication, createOtherTenant, createToken } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/** The shared token lookup that concurrent detokenizations, proxy calls and reactor runs go through. */
describe('token lookup by (tenant, id)', () => {
  let server: TestServer;
  let first: string;
  let second: string;
  let otherTenant: string;
  let key: string;
  before(async () => {
    server = await startTestServer();
    const reveal = { priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] };
    key = (await createApplication(server, { name: 'lookup', type: 'private', rules: [reveal] })).key;
    first = await createToken(server, key, { type: 'token', data: 'first' });
    // Metadata, several containers and a quote in a value: what the use lookup must read as the whole lookup does.
    second = await createToken(server, key, { type: 'token', data: 'second', metadata: { order: '12"34', note: 'ünï' }, containers: ['/a/', '/b/c/'] });
    otherTenant = (await createOtherTenant(server)).tenant_id;
  });
  after(() => server.stop());

  it('returns each token once however often its pair is asked for, and never under another tenant', async () => {
    const db = server.running.database.db;
    const mine = (id: string) => ({ tenantId: server.tenantId, id });
    const rows = await findTokensByKeys(db, [mine(first), mine(first), mine(second), mine(first), { tenantId: otherTenant, id: first }, mine('no-such-token')]);
    assert.deepEqual(rows.map((r) => r.id).sort(), [first, second].sort());
    assert.ok(rows.every((r) => r.tenant_id === server.tenantId));
  });

  it("a use's lookup reads only what a use needs, with the same tokens as the whole lookup", async () => {
    const db = server.running.database.db;
    const mine = (id: string) => ({ tenantId: server.tenantId, id });
    const keys = [mine(first), mine(second), mine(first), { tenantId: otherTenant, id: second }];
    const used = await findUsedTokensByKeys(db, keys);
    const whole = await findTokensByKeys(db, keys);
    assert.deepEqual(used.map((r) => r.id).sort(), [first, second].sort());
    for (const row of used) {
      assert.deepEqual(Object.keys(row).sort(), ['ciphertext', 'containers', 'data_key_id', 'id', 'tenant_id', 'type']);
      const same = whole.find((w) => w.id === row.id)!;
      for (const [column, value] of Object.entries(row)) assert.deepEqual(value, same[column as keyof typeof same], column);
    }
  });

  it('concurrent uses of one token each get its data and are each audited', async () => {
    const uses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call(server, 'POST', '/detokenize', { key, body: { n: i, v: `{{ ${first} }}` } })),
    );
    for (const [i, res] of uses.entries()) {
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(res.body, { n: i, v: 'first' });
    }
    const logs = await call(server, 'GET', `/logs?entity_type=token&entity_id=${first}&size=100`, { key: server.key });
    assert.equal(logs.status, 200, logs.text);
    assert.equal(logs.body.data.filter((e: { operation: string }) => e.operation === 'detokenize').length, 20);
  });
});
