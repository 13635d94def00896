import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { fileRootKeyLoader, parseRootKeys, RootKeySource, urlRootKeyLoader } from '../../src/google-pay/index.ts';
import { OutboundClient } from '../../src/outbound/client.ts';
import { p256KeyPair, rootKeysJson } from '../helpers/google-pay-seal.ts';
import { startServer } from '../outbound/helpers.ts';
import { rejectsGooglePay } from './helpers.ts';

/** Google's root signing keys: keys.json parsed and filtered, fetched through the guarded client, cached until they expire. */

const NOW = Date.parse('2026-11-28T12:00:00Z');
const HOUR = 3_600_000;
const rootA = p256KeyPair();
const rootB = p256KeyPair();

const clients: OutboundClient[] = [];
const servers: { close(): Promise<void> }[] = [];
after(async () => {
  await Promise.all([...clients.map((c) => c.close()), ...servers.map((s) => s.close())]);
});

/** A loopback keys.json server whose answer the test sets, counting requests; and a client allowed to reach it. */
async function keysServer() {
  const state = { status: 200, body: '', requests: 0, delayMs: 0 };
  const server = await startServer((_req, res) => {
    state.requests++;
    setTimeout(() => {
      res.statusCode = state.status;
      res.setHeader('content-type', 'application/json');
      res.end(state.body);
    }, state.delayMs);
  });
  servers.push(server);
  const client = new OutboundClient({ allowlist: ['127.0.0.1'] });
  clients.push(client);
  const url = `${server.origin}/paymentmethodtoken/keys.json`;
  return { state, url, source: (o: { maxAgeMs?: number; retryAfterFailureMs?: number } = {}) => new RootKeySource({ load: urlRootKeyLoader(client, url), source: url, ...o }) };
}

describe('parseRootKeys', () => {
  it('keeps the ECv2 entries whose keyValue is a P-256 key; skips the rest', () => {
    const json = JSON.stringify({
      keys: [
        { keyValue: rootA.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), protocolVersion: 'ECv2', keyExpiration: String(NOW + HOUR) },
        { keyValue: rootA.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), protocolVersion: 'ECv1' },
        { keyValue: 'not base64!', protocolVersion: 'ECv2', keyExpiration: String(NOW + HOUR) },
        { keyValue: 'abcd', protocolVersion: 'ECv2', keyExpiration: String(NOW + HOUR) },
        'junk',
        { keyValue: rootB.publicKey.export({ format: 'der', type: 'spki' }).toString('base64'), protocolVersion: 'ECv2' },
      ],
    });
    const keys = parseRootKeys(json, 'test');
    assert.deepEqual(keys.map((k) => [k.protocolVersion, k.keyExpiration]), [['ECv2', NOW + HOUR], ['ECv2', undefined]]);
  });

  it('a text that is not a keys list is root_keys_unavailable', async () => {
    for (const text of ['not json', '[]', '{"keys": {}}', '{}']) {
      await rejectsGooglePay(async () => parseRootKeys(text, 'test'), 'root_keys_unavailable');
    }
  });
});

describe('RootKeySource over HTTP (the guarded outbound client)', () => {
  it('fetches once, serves from cache until the earliest keyExpiration, then fetches again', async () => {
    const { state, source } = await keysServer();
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + 2 * HOUR }, { key: rootB.publicKey, keyExpiration: NOW + 5 * HOUR }]);
    const keys = source();
    assert.equal((await keys.get(NOW)).length, 2);
    assert.equal((await keys.get(NOW + HOUR)).length, 2);
    assert.equal((await keys.get(NOW + 2 * HOUR - 1)).length, 2);
    assert.equal(state.requests, 1);
    // Google has replaced the first key by then.
    state.body = rootKeysJson([{ key: rootB.publicKey, keyExpiration: NOW + 5 * HOUR }]);
    const later = await keys.get(NOW + 2 * HOUR);
    assert.equal(state.requests, 2);
    assert.equal(later.length, 1);
    assert.ok(later[0].key.equals(rootB.publicKey));
    await keys.get(NOW + 3 * HOUR);
    assert.equal(state.requests, 2);
  });

  it('keys are fetched again after maxAgeMs even when none expires sooner', async () => {
    const { state, source } = await keysServer();
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + 1000 * HOUR }]);
    const keys = source({ maxAgeMs: HOUR });
    await keys.get(NOW);
    await keys.get(NOW + HOUR - 1);
    assert.equal(state.requests, 1);
    await keys.get(NOW + HOUR);
    assert.equal(state.requests, 2);
  });

  it('concurrent callers share one fetch', async () => {
    const { state, source } = await keysServer();
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + HOUR }]);
    state.delayMs = 50;
    const keys = source();
    const all = await Promise.all(Array.from({ length: 20 }, () => keys.get(NOW)));
    assert.equal(state.requests, 1);
    assert.ok(all.every((k) => k.length === 1));
  });

  it('a failed fetch is root_keys_unavailable, remembered briefly, then tried again', async () => {
    const { state, source, url } = await keysServer();
    state.status = 500;
    const keys = source({ retryAfterFailureMs: 10_000 });
    const err = await rejectsGooglePay(() => keys.get(NOW), 'root_keys_unavailable');
    assert.match(err.message, /answered 500/);
    assert.ok(err.message.includes(url));
    await rejectsGooglePay(() => keys.get(NOW + 1000), 'root_keys_unavailable');
    assert.equal(state.requests, 1, 'no new request within retryAfterFailureMs');
    state.status = 200;
    state.body = 'not json';
    await rejectsGooglePay(() => keys.get(NOW + 10_000), 'root_keys_unavailable');
    assert.equal(state.requests, 2);
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + HOUR }]);
    assert.equal((await keys.get(NOW + 20_000)).length, 1);
  });

  it('while fetching fails, keys still valid are used', async () => {
    const { state, source } = await keysServer();
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + 10 * HOUR }]);
    const keys = source({ maxAgeMs: HOUR });
    await keys.get(NOW);
    state.status = 503;
    assert.equal((await keys.get(NOW + 2 * HOUR)).length, 1);
    assert.equal(state.requests, 2);
    // Once they expire, the failure shows.
    await rejectsGooglePay(() => keys.get(NOW + 10 * HOUR), 'root_keys_unavailable');
  });

  it('a list with no usable ECv2 key is no_valid_root_key', async () => {
    const { state, source } = await keysServer();
    state.body = rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW - 1 }, { key: rootB.publicKey, protocolVersion: 'ECv1' }, { key: rootB.publicKey }]);
    await rejectsGooglePay(() => source().get(NOW), 'no_valid_root_key');
  });

  it('loopback is refused unless OUTBOUND_ALLOWLIST allows it: the guard applies', async () => {
    const { state, url } = await keysServer();
    const guarded = new OutboundClient({ allowlist: [] });
    clients.push(guarded);
    const keys = new RootKeySource({ load: urlRootKeyLoader(guarded, url), source: url });
    const err = await rejectsGooglePay(() => keys.get(NOW), 'root_keys_unavailable');
    assert.match(err.message, /private, loopback or reserved/);
    assert.equal(state.requests, 0);
  });
});

describe('RootKeySource over a file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-gpay-keys-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('reads the file, and again once its keys lapse', async () => {
    const file = path.join(dir, 'keys.json');
    fs.writeFileSync(file, rootKeysJson([{ key: rootA.publicKey, keyExpiration: NOW + HOUR }]));
    const keys = new RootKeySource({ load: fileRootKeyLoader(file), source: file });
    assert.ok((await keys.get(NOW))[0].key.equals(rootA.publicKey));
    fs.writeFileSync(file, rootKeysJson([{ key: rootB.publicKey, keyExpiration: NOW + 2 * HOUR }]));
    assert.ok((await keys.get(NOW + HOUR - 1))[0].key.equals(rootA.publicKey), 'cached');
    assert.ok((await keys.get(NOW + HOUR))[0].key.equals(rootB.publicKey), 'read again');
  });

  it('a missing file is root_keys_unavailable naming it', async () => {
    const file = path.join(dir, 'missing.json');
    const err = await rejectsGooglePay(() => new RootKeySource({ load: fileRootKeyLoader(file), source: file }).get(NOW), 'root_keys_unavailable');
    assert.ok(err.message.includes(file) && err.message.includes('ENOENT'), err.message);
  });
});
