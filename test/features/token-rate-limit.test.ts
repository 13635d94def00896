import assert from 'node:assert/strict';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { call, createApplication, type Response } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/** Token creation by keys held by clients (public and session keys) is rate limited per key and per client address. */

const CARD = { type: 'card_number', data: '4242424242424242' };

describe('rate of token creation by public keys', () => {
  let server: TestServer;
  let backend: string;

  before(async () => {
    // One token a second, 3 at once from one address, 5 at once from all of them.
    server = await startTestServer({
      WORKERS: '0',
      PUBLIC_TOKEN_CREATE_RATE: '60',
      PUBLIC_TOKEN_CREATE_BURST: '3',
      PUBLIC_TOKEN_CREATE_KEY_RATE: '60',
      PUBLIC_TOKEN_CREATE_KEY_BURST: '5',
    });
    rememberSecret(CARD.data);
    backend = (await createApplication(server, { name: 'backend', type: 'private', permissions: ['token:create', 'token:read'] })).key;
  });
  after(() => server.stop());

  const publicKey = async () => (await createApplication(server, { name: 'browser', type: 'public', permissions: ['token:create'] })).key;
  const create = (key: string) => call(server, 'POST', '/tokens', { key, body: CARD });

  function assertLimited(res: Response): number {
    assert.equal(res.status, 429, res.text);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(res.body.status, 429);
    assert.match(res.body.detail, /Too many tokens created with this API key/);
    const retryAfter = Number(res.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${res.headers.get('retry-after')}`);
    return retryAfter;
  }

  it('lets a burst through, then answers 429 with Retry-After until a token has come back', async () => {
    const key = await publicKey();
    for (let i = 0; i < 3; i++) assert.equal((await create(key)).status, 201);
    const wait = assertLimited(await create(key));
    // Private keys are not limited, from the same address.
    for (let i = 0; i < 10; i++) assert.equal((await create(backend)).status, 201);
    // Another public key has budgets of its own.
    assert.equal((await create(await publicKey())).status, 201);
    await sleep(wait * 1000);
    assert.equal((await create(key)).status, 201);
  });

  it('counts every token of a tokenize; one larger than the burst goes on a full bucket and leaves it in debt', async () => {
    const key = await publicKey();
    const three = await call(server, 'POST', '/tokenize', { key, body: [CARD, CARD, CARD] });
    assert.equal(three.status, 201, three.text);
    assertLimited(await create(key));
    const other = await publicKey();
    const four = await call(server, 'POST', '/tokenize', { key: other, body: { a: CARD, b: [CARD, CARD, CARD] } });
    assert.equal(four.status, 201, four.text);
    // One token short, and the next one due in a second: two seconds.
    assert.equal(assertLimited(await create(other)), 2);
    // A refused request takes nothing.
    assert.equal(assertLimited(await call(server, 'POST', '/tokenize', { key: other, body: [CARD] })), 2);
  });

  it('limits a key across client addresses too', async () => {
    const key = await publicKey();
    for (let i = 0; i < 3; i++) assert.equal((await create(key)).status, 201);
    assertLimited(await create(key));
    // Another address has its own 3, but the key has only 5 in all.
    for (let i = 0; i < 2; i++) assert.equal((await createFrom('127.0.0.2', key)).status, 201);
    const res = await createFrom('127.0.0.2', key);
    assert.equal(res.status, 429, res.body);
    assert.ok(Number(res.retryAfter) >= 1);
  });

  it('limits session keys as well, each on its own', async () => {
    const pub = await publicKey();
    const authorizer = (await createApplication(server, { name: 'authorizer', type: 'private', permissions: ['session:authorize'] })).key;
    const session = await call(server, 'POST', '/sessions', { key: pub });
    rememberSecret(session.body.session_key, session.body.nonce);
    const authorized = await call(server, 'POST', '/sessions/authorize', { key: authorizer, body: { nonce: session.body.nonce, permissions: ['token:create'] } });
    assert.equal(authorized.status, 204, authorized.text);
    for (let i = 0; i < 3; i++) assert.equal((await create(session.body.session_key)).status, 201);
    assertLimited(await create(session.body.session_key));
    assert.equal((await create(pub)).status, 201, 'the public key that made the session keeps its own budget');
  });

  /** POST /tokens from another loopback address (the client address is the TCP peer's). */
  function createFrom(localAddress: string, key: string): Promise<{ status: number; body: string; retryAfter: string | undefined }> {
    const url = new URL('/tokens', server.url);
    const body = JSON.stringify(CARD);
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method: 'POST', localAddress, headers: { 'svc-api-key': key, 'content-type': 'application/json' } }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, retryAfter: res.headers['retry-after'] as string | undefined }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
});
