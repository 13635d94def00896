import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { destinationError } from '../../src/features/proxies/message.ts';
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
