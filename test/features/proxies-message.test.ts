import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { destinationError } from '../../src/features/proxies/message.ts';
import { registerProxyRoutes } from '../../src/features/proxies/routes.ts';
import type { ProxyService } from '../../src/features/proxies/service.ts';
import { registerOpenApi } from '../../src/http/openapi.ts';
import { createServer } from '../../src/http/server.ts';
import { createLogger } from '../../src/logger.ts';
import { OutboundError } from '../../src/outbound/errors.ts';

describe('proxies: what a refused or failed destination call tells the caller', () => {
  it('an internal address points at OUTBOUND_ALLOWLIST; a refused port does not, which the allowlist cannot lift', () => {
    const internal = destinationError(new OutboundError('blocked_address', 'db.internal resolves to a private, loopback or reserved address'), 25_000);
    assert.equal(internal.status, 403);
    assert.match(internal.detail, /OUTBOUND_ALLOWLIST/);
    const port = destinationError(new OutboundError('blocked_address', 'port 25 belongs to another protocol and is refused for outbound HTTP', { port: 25 }), 25_000);
    assert.equal(port.status, 403);
    assert.match(port.detail, /port 25/);
    assert.doesNotMatch(port.detail, /OUTBOUND_ALLOWLIST/);
  });

  it('a timeout is a 504 naming the limit; anything else unreachable a 502', () => {
    assert.equal(destinationError(new OutboundError('timeout', 'too slow'), 1234).status, 504);
    assert.match(destinationError(new OutboundError('timeout', 'too slow'), 1234).detail, /1234 ms/);
    assert.equal(destinationError(new OutboundError('connect_failed', 'refused'), 1).status, 502);
  });
});

describe('proxies: an invocation that finds the database unreachable', () => {
  it('is a 503 proxy_error with Retry-After, nothing of the cause', async () => {
    const app = createServer(createLogger('silent'));
    await registerOpenApi(app, 'test');
    const down = Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:5432'), { code: 'ECONNREFUSED' });
    const proxies = {
      invoke: async () => {
        throw down;
      },
      errorOf: () => undefined,
    } as unknown as ProxyService;
    registerProxyRoutes(app, proxies, { maxBodyBytes: 1024 });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      const res = await fetch(`${url}/proxy/x`, { method: 'POST', body: '{}' });
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '1');
      assert.equal(res.headers.get('svc-proxy-destination-status'), null);
      const text = await res.text();
      assert.equal(JSON.parse(text).proxy_error.status, 503);
      assert.doesNotMatch(text, /10\.9\.8\.7|ECONNREFUSED/);
    } finally {
      await app.close();
    }
  });
});
