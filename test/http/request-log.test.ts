import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createServer } from '../../src/http/server.ts';
import { createLogger, isSecretQueryName, redactUrl } from '../../src/logger.ts';
import { call } from '../helpers/http.ts';
import { rememberSecret, startTestServer } from '../helpers/server.ts';

/**
 * A request's log line carries its URL, query included: a credential sent as a query
 * parameter (`?svc-api-key=…`, `?access_token=…`) is logged as `[Redacted]`, never in clear.
 */

const SECRETS = ['s3cr3t-svc-api', 's3cr3t-proxy', 's3cr3t-api-key', 's3cr3t-token', 's3cr3t-sig', 's3cr3t-pass', 's3cr3t-auth', 's3cr3t-client'];
const QUERY = [
  `svc-api-key=${SECRETS[0]}`,
  `SVC-Proxy-Key=${SECRETS[1]}`,
  `api_key=${SECRETS[2]}`,
  `access_token=${SECRETS[3]}`,
  `X-Amz-Signature=${SECRETS[4]}`,
  `password=${SECRETS[5]}`,
  `Authorization=${SECRETS[6]}`,
  `client%5Fsecret=${SECRETS[7]}`,
  'page=2',
  'design=plain',
].join('&');

describe('request logs', () => {
  it('redact every credential-named query parameter of a request\'s URL, and keep the others', async () => {
    const lines: string[] = [];
    const app = createServer(createLogger('info', { write: (line: string) => void lines.push(line) }));
    app.get('/things', { config: { access: 'public' } }, async () => ({ ok: true }));
    await app.ready();
    const res = await app.inject({ method: 'GET', url: `/things?${QUERY}` });
    assert.equal(res.statusCode, 200);
    await app.close();
    const logged = lines.join('\n');
    const urls = lines.map((l) => JSON.parse(l).req?.url).filter(Boolean);
    assert.ok(urls.length > 0, 'the request was logged with its URL');
    for (const secret of SECRETS) assert.ok(!logged.includes(secret), `${secret} logged: ${logged}`);
    assert.match(urls[0], /page=2&design=plain$/);
    assert.match(urls[0], /^\/things\?svc-api-key=\[Redacted\]&SVC-Proxy-Key=\[Redacted\]&api_key=\[Redacted\]/);
  });

  it('which names count as credentials', () => {
    for (const name of ['svc-anything', 'key', 'apiKey', 'x-api-key', 'token', 'id_token', 'secret', 'passwd', 'pwd', 'auth', 'oauth_signature', 'sig', 'hmac-sig', 'pass', 'credential', 'sessionid', 'jwt', 'Bearer', 'svc%2Dproxy%2Dkey', 'to%6Ben']) {
      assert.ok(isSecretQueryName(name), name);
    }
    for (const name of ['page', 'design', 'passage', 'q', 'amount', 'currency', 'signal']) {
      assert.ok(!isSecretQueryName(name), name);
    }
    assert.equal(redactUrl('/a?token&x=1'), '/a?token&x=1', 'a name without a value has nothing to hide');
  });

  it('a real server\'s log lines do not hold a credential sent in the query (the run\'s log scan checks them)', async () => {
    const server = await startTestServer();
    try {
      const secret = `query-secret-${Date.now()}`;
      rememberSecret(secret);
      for (const name of ['svc-api-key', 'access_token', 'X-Amz-Credential']) {
        assert.equal((await call(server, 'GET', `/ping?${name}=${secret}`)).status, 200);
      }
    } finally {
      await server.stop();
    }
  });
});
