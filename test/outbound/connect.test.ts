import assert from 'node:assert/strict';
import dns from 'node:dns';
import type net from 'node:net';
import { after, describe, it, test } from 'node:test';
import { createGuardedConnector, createGuardedLookup, MAX_CONCURRENT_LOOKUPS, systemResolver, type ResolvedAddress } from '../../src/outbound/connect.ts';
import { OutboundError } from '../../src/outbound/errors.ts';
import { AddressPolicy } from '../../src/outbound/policy.ts';
import { fakeResolver, startSilentServer, type TestServer } from './helpers.ts';

// The connect-time guard on its own, below undici: the layer that makes the address
// check DNS-rebinding safe and that still holds if a literal IP ever got past validateUrl.

type LookupResult = { err: Error | null; address: string | ResolvedAddress[]; family?: number };

function lookupWith(policy: AddressPolicy, table: Record<string, string[]>, hostname: string, options: { all?: boolean; family?: number }) {
  const lookup = createGuardedLookup(policy, fakeResolver(table).resolve);
  return new Promise<LookupResult>((resolve) => lookup(hostname, options, (err, address, family) => resolve({ err, address, family })));
}

const servers: TestServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

test('lookup answers in the shape net asks for, with checked addresses only', async () => {
  const policy = new AddressPolicy(['127.0.0.1', '::1']);
  const table = { 'dual.test': ['::1', '127.0.0.1'] };
  const all = await lookupWith(policy, table, 'dual.test', { all: true });
  assert.equal(all.err, null);
  assert.deepEqual(all.address, [
    { address: '::1', family: 6 },
    { address: '127.0.0.1', family: 4 },
  ]);
  const one = await lookupWith(policy, table, 'dual.test', {});
  assert.deepEqual([one.address, one.family], ['::1', 6]);
  const v4 = await lookupWith(policy, table, 'dual.test', { family: 4 });
  assert.deepEqual([v4.address, v4.family], ['127.0.0.1', 4]);
});

test('lookup refuses a name with any blocked address, or none of the asked family', async () => {
  const policy = new AddressPolicy(['127.0.0.1']);
  const table = { 'dual.test': ['127.0.0.1', '::1'], 'v4.test': ['127.0.0.1'] };
  const blocked = await lookupWith(policy, table, 'dual.test', { all: true });
  assert.ok(blocked.err instanceof OutboundError);
  assert.equal(blocked.err.code, 'blocked_address');
  assert.doesNotMatch(blocked.err.message, /::1|127\.0\.0\.1/, 'the internal address is not revealed');
  const noV6 = await lookupWith(policy, table, 'v4.test', { family: 6 });
  assert.equal((noV6.err as OutboundError).code, 'dns_failed');
  const unknown = await lookupWith(policy, table, 'nope.test', { all: true });
  assert.equal((unknown.err as OutboundError).code, 'dns_failed');
});

test('an allowlisted hostname may resolve to private addresses', async () => {
  const policy = new AddressPolicy(['vault.internal']);
  const res = await lookupWith(policy, { 'vault.internal': ['10.0.0.5', 'fd00::5'] }, 'vault.internal', { all: true });
  assert.equal(res.err, null);
  assert.equal((res.address as ResolvedAddress[]).length, 2);
});

function connectWith(policy: AddressPolicy, hostname: string, port: number, table: Record<string, string[]> = {}) {
  const connect = createGuardedConnector({ policy, resolve: fakeResolver(table).resolve, connectTimeoutMs: 2000 });
  return new Promise<{ err: Error | null; socket: net.Socket | null }>((resolve) =>
    connect({ hostname, host: `${hostname}:${port}`, protocol: 'http:', port: String(port) }, (err, socket) =>
      resolve({ err, socket: socket as net.Socket | null }),
    ),
  );
}

test('the connector checks literal IPs itself, bracketed or not', async () => {
  const s = await startSilentServer();
  servers.push(s);
  const policy = new AddressPolicy([]);
  for (const host of ['127.0.0.1', '[::1]', '::ffff:127.0.0.1', '169.254.169.254', '10.0.0.1']) {
    const { err, socket } = await connectWith(policy, host, s.port);
    assert.equal(socket, null, host);
    assert.equal((err as OutboundError).code, 'blocked_address', host);
  }
  assert.equal(s.connections(), 0);
});

test('the connector connects to the checked address of an allowed hostname', async () => {
  const s = await startSilentServer();
  servers.push(s);
  const { err, socket } = await connectWith(new AddressPolicy(['127.0.0.1']), 'svc.test', s.port, { 'svc.test': ['127.0.0.1'] });
  assert.equal(err, null);
  assert.equal(socket!.remoteAddress, '127.0.0.1');
  socket!.destroy();
  const refused = await connectWith(new AddressPolicy([]), 'svc.test', s.port, { 'svc.test': ['127.0.0.1'] });
  assert.equal((refused.err as OutboundError).code, 'blocked_address');
  assert.equal(s.connections(), 1);
});

describe('systemResolver', () => {
  it(`runs at most ${MAX_CONCURRENT_LOOKUPS} lookups at once; the rest wait for a slot, in order`, async (t) => {
    const pending: (() => void)[] = [];
    const lookup = t.mock.method(dns.promises, 'lookup', (hostname: string) =>
      new Promise((resolve) => pending.push(() => resolve([{ address: '192.0.2.1', family: 4, hostname }]))),
    );
    const answers = Array.from({ length: MAX_CONCURRENT_LOOKUPS + 4 }, (_, i) => systemResolver(`h${i}.example`));
    await new Promise((r) => setImmediate(r));
    assert.equal(lookup.mock.callCount(), MAX_CONCURRENT_LOOKUPS, 'the rest wait');
    pending.shift()!();
    await answers[0];
    await new Promise((r) => setImmediate(r));
    assert.equal(lookup.mock.callCount(), MAX_CONCURRENT_LOOKUPS + 1, 'a finished lookup lets the next start');
    assert.equal(lookup.mock.calls.at(-1)!.arguments[0], `h${MAX_CONCURRENT_LOOKUPS}.example`);
    while (pending.length) {
      pending.shift()!();
      await new Promise((r) => setImmediate(r));
    }
    assert.equal((await Promise.all(answers)).length, MAX_CONCURRENT_LOOKUPS + 4);
    assert.equal(lookup.mock.callCount(), MAX_CONCURRENT_LOOKUPS + 4);
  });
});
