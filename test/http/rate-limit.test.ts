import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBuckets } from '../../src/http/rate-limit.ts';

describe('token buckets (anonymous proxies, token creation by public keys)', () => {
  it('lets a burst through, then answers with the whole seconds until the next request may go', () => {
    const b = new TokenBuckets(2, 3);
    const t = 1_000_000;
    assert.deepEqual([b.take('p|a', t), b.take('p|a', t), b.take('p|a', t)], [0, 0, 0]);
    // Empty at 2 tokens a second: the next token is half a second away, reported as 1 s.
    assert.equal(b.take('p|a', t), 1);
    // Half a second later one token has come back, and only one.
    assert.equal(b.take('p|a', t + 500), 0);
    assert.equal(b.take('p|a', t + 500), 1);
  });

  it('keeps a bucket per key, and never holds more than the burst', () => {
    const b = new TokenBuckets(1, 2);
    const t = 5_000_000;
    assert.equal(b.take('p|a', t), 0);
    assert.equal(b.take('p|a', t), 0);
    assert.equal(b.take('p|a', t), 1);
    assert.equal(b.take('p|b', t), 0, 'another address has its own budget');
    // An hour idle refills to the burst (2), not to 3,600.
    const later = t + 3_600_000;
    assert.deepEqual([b.take('p|a', later), b.take('p|a', later), b.take('p|a', later)], [0, 0, 1]);
  });

  it('takes a cost at once; one above the burst goes on a full bucket and leaves it in debt', () => {
    const b = new TokenBuckets(1, 3);
    const t = 2_000_000;
    assert.equal(b.take('k', t, 2), 0);
    // One left: a cost of 2 waits a second for the second token, and takes nothing meanwhile.
    assert.equal(b.take('k', t, 2), 1);
    assert.equal(b.take('k', t, 1), 0);
    const big = new TokenBuckets(1, 3);
    assert.equal(big.take('k', t, 5), 0, 'a full bucket lets it through');
    // 3 - 5 = -2: the next single token is 3 s away.
    assert.equal(big.take('k', t, 1), 3);
    assert.equal(big.take('k', t + 3000, 1), 0);
  });

  it('wait answers as take would, without taking', () => {
    const b = new TokenBuckets(1, 2);
    const t = 3_000_000;
    assert.equal(b.wait('k', t, 2), 0);
    assert.equal(b.wait('k', t, 2), 0);
    assert.equal(b.take('k', t, 2), 0);
    assert.equal(b.wait('k', t, 1), 1);
  });

  it('a rate of 0 means no limit', () => {
    const b = new TokenBuckets(0, 1);
    for (let i = 0; i < 1000; i++) assert.equal(b.take('p|a', 1), 0);
  });

  it('stays bounded: past 100,000 buckets the refilled ones, then the oldest half, are forgotten', () => {
    const b = new TokenBuckets(1, 1);
    const t = 9_000_000;
    for (let i = 0; i < 100_000; i++) b.take(`p|${i}`, t);
    // Every bucket is empty at t, so none can be dropped as full: the oldest half goes, and a
    // forgotten key starts over with a full bucket while a kept one is still empty.
    assert.equal(b.take('p|new', t), 0);
    assert.equal(b.take('p|0', t), 0, 'the oldest key was forgotten');
    assert.equal(b.take('p|99999', t), 1, 'the newest key was kept');
  });
});
