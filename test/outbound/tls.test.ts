import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { OutboundClient } from '../../src/outbound/client.ts';
import { fakeResolver, rejectsWith, startServer, type TestServer } from './helpers.ts';

// HTTPS: the socket connects to the checked IP, while SNI and certificate verification
// still use the URL's hostname. The self-signed test certificate (CN coffer-outbound-test,
// names api.test and 127.0.0.1, valid for 100 years) is a fixture: a test key, nothing else.
const fixtures = path.join(import.meta.dirname, 'fixtures');
const pair = { key: fs.readFileSync(path.join(fixtures, 'key.pem'), 'utf8'), cert: fs.readFileSync(path.join(fixtures, 'cert.pem'), 'utf8') };

describe('HTTPS', () => {
  let s: TestServer;
  const clients: OutboundClient[] = [];
  const client = (options: ConstructorParameters<typeof OutboundClient>[0]) => {
    const c = new OutboundClient({ ca: pair.cert, ...options });
    clients.push(c);
    return c;
  };

  before(async () => {
    s = await startServer((req, res) => res.end(`secure ${req.headers.host}`), pair!);
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await s.close();
  });

  test('an allowlisted literal IP is verified against the certificate IP', async () => {
    const res = await client({ allowlist: ['127.0.0.1'] }).request({ url: `https://127.0.0.1:${s.port}/` });
    assert.equal(res.body.toString(), `secure 127.0.0.1:${s.port}`);
  });

  test('a hostname connects to its checked address but is verified by name', async () => {
    const dns = fakeResolver({ 'api.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    const c = client({ allowlist: ['api.test', 'other.test'], resolve: dns.resolve });
    const res = await c.request({ url: `https://api.test:${s.port}/` });
    assert.equal(res.body.toString(), `secure api.test:${s.port}`);
    // Same address, a name the certificate does not carry: verification must fail.
    const err = await rejectsWith(c.request({ url: `https://other.test:${s.port}/` }), 'connect_failed');
    assert.match(err.message, /TLS/);
  });

  test('an untrusted certificate is connect_failed', async () => {
    const c = new OutboundClient({ allowlist: ['127.0.0.1'] });
    clients.push(c);
    const err = await rejectsWith(c.request({ url: `https://127.0.0.1:${s.port}/` }), 'connect_failed');
    assert.match(err.message, /TLS/);
  });

  test('https to a blocked address is refused before the TCP connection', async () => {
    const before = s.connections();
    const dns = fakeResolver({ 'api.test': ['127.0.0.1'] });
    const c = client({ allowlist: [], resolve: dns.resolve });
    await rejectsWith(c.request({ url: `https://api.test:${s.port}/` }), 'blocked_address');
    await rejectsWith(client({ allowlist: [] }).request({ url: `https://localhost:${s.port}/` }), 'blocked_address');
    await rejectsWith(c.request({ url: `https://127.0.0.1:${s.port}/` }), 'blocked_address');
    assert.equal(s.connections(), before);
  });
});
