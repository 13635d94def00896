import assert from 'node:assert/strict';
import type http from 'node:http';
import { test } from 'node:test';
import { OriginSlots } from '../../src/outbound/slots.ts';
import { until } from '../helpers/until.ts';
import { rejectsWith, startServer, trackClientsAndServers } from './helpers.ts';

// One tenant's slow destination must not take every connection to an origin others call too:
// a tenant holds at most its share (`tenantConnections`) of an origin's pool.
const { client, server } = trackClientsAndServers();

/** An origin whose `/slow…` answers wait until the test lets them go (or opens it); anything else answers at once. */
async function slowOrigin() {
  const held: { url: string; res: http.ServerResponse }[] = [];
  let open = false;
  const s = await server(startServer((req, res) => {
    if (req.url?.startsWith('/slow') && !open) held.push({ url: req.url, res });
    else res.end(`fast ${req.url}`);
  }));
  return Object.assign(s, {
    held,
    /** Answers the held request for `url` (the first, if several). */
    release(url: string) {
      const i = held.findIndex((h) => h.url === url);
      assert.ok(i >= 0, `${url} is not held`);
      const [h] = held.splice(i, 1);
      h.res.end(`slow ${url}`);
    },
    /** Answers every held request, and from now on every request at once. */
    open() {
      open = true;
      for (const h of held.splice(0)) h.res.end('slow');
    },
  });
}

test('a tenant holding its whole share of an origin leaves the rest of the pool to the others', async () => {
  const s = await slowOrigin();
  const c = client({ allowlist: ['127.0.0.1'], connections: 4, tenantConnections: 2 });
  const a = Array.from({ length: 6 }, (_, i) => c.request({ url: `${s.origin}/slow/a${i}`, tenantId: 'tenant-a' }));
  await until(() => s.held.length === 2, 'tenant A holding its share');
  // Tenant A's other four wait for its own calls; B's call to the same origin goes at once.
  const b = await c.request({ url: `${s.origin}/b`, tenantId: 'tenant-b' });
  assert.equal(b.body.toString(), 'fast /b');
  assert.equal(s.held.length, 2, 'tenant A never had more than its share in flight');
  s.open();
  for (const res of await Promise.all(a)) assert.equal(res.status, 200);
});

test('with the origin full, a freed connection goes to the waiting tenant holding the fewest, not to the longest queue', async () => {
  const s = await slowOrigin();
  const c = client({ allowlist: ['127.0.0.1'], connections: 4, tenantConnections: 2 });
  const a = Array.from({ length: 4 }, (_, i) => c.request({ url: `${s.origin}/slow/a${i}`, tenantId: 'a' }));
  const z = Array.from({ length: 4 }, (_, i) => c.request({ url: `${s.origin}/slow/z${i}`, tenantId: 'z' }));
  await until(() => s.held.length === 4, 'the origin full: two calls of each tenant');
  // Past its deadline only if the freed connection went to someone else: nothing else is freed.
  const b = c.request({ url: `${s.origin}/b`, tenantId: 'b', timeoutMs: 10_000 });
  // A's queued calls were there first, but A still holds one: B, holding none, goes next.
  s.release(s.held.find((h) => h.url.startsWith('/slow/a'))!.url);
  assert.equal((await b).body.toString(), 'fast /b');
  s.open();
  for (const res of await Promise.all([...a, ...z])) assert.equal(res.status, 200);
});

test('calls without a tenant share one share; the Keep-Alive path counts against the same pool', async () => {
  const s = await slowOrigin();
  const c = client({ allowlist: ['127.0.0.1'], connections: 2, tenantConnections: 1 });
  const first = c.stream({ url: `${s.origin}/slow/1`, headers: { 'keep-alive': 'timeout=5' } });
  await until(() => s.held.length === 1, 'the first call in flight');
  // No tenant's share is free: this one waits for the first, until its deadline.
  await rejectsWith(c.request({ url: `${s.origin}/x`, timeoutMs: 200 }), 'timeout');
  assert.equal((await c.request({ url: `${s.origin}/y`, tenantId: 't' })).body.toString(), 'fast /y');
  s.open();
  const res = await first;
  for await (const _ of res.body);
  assert.equal((await c.request({ url: `${s.origin}/z` })).body.toString(), 'fast /z');
});

test('a share cannot be bigger than the pool; a tenant id must be a string', async () => {
  const s = await slowOrigin();
  const c = client({ allowlist: ['127.0.0.1'], connections: 2, tenantConnections: 5 });
  const calls = Array.from({ length: 3 }, (_, i) => c.request({ url: `${s.origin}/slow/${i}`, tenantId: 't' }));
  await until(() => s.held.length === 2, 'the pool full');
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(s.held.length, 2);
  s.open();
  await Promise.all(calls);
  await rejectsWith(c.request({ url: s.origin, tenantId: 7 as unknown as string }), 'invalid_request');
  assert.throws(() => client({ allowlist: [], tenantConnections: 0 }), TypeError);
});

test('OriginSlots: an aborted wait leaves no trace, and a slot given back twice counts once', async () => {
  const slots = new OriginSlots(1, 1);
  const held = await slots.acquire('http://o', 't', new AbortController().signal);
  const gone = new AbortController();
  const waiting = Promise.resolve(slots.acquire('http://o', 't', gone.signal));
  gone.abort(new Error('gave up'));
  await assert.rejects(waiting, /gave up/);
  held();
  held();
  const again = await slots.acquire('http://o', 'u', new AbortController().signal);
  const next = Promise.resolve(slots.acquire('http://o', 'v', new AbortController().signal));
  let got = false;
  void next.then(() => (got = true));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(got, false, 'one slot, still held');
  again();
  (await next)();
});
