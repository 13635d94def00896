import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomBytesPooled } from '../../src/random.ts';

describe('randomBytesPooled', () => {
  it('hands out buffers of the asked length that never repeat, across many refills of the pool', () => {
    const seen = new Set<string>();
    // 16 × 2,000 bytes: the 4 KiB pool refills several times, including mid-request sizes.
    for (let i = 0; i < 2000; i++) {
      const n = i % 3 === 0 ? 12 : 16;
      const b = randomBytesPooled(n);
      assert.equal(b.length, n);
      const hex = b.toString('hex');
      assert.ok(!seen.has(hex), `value ${i} repeated`);
      seen.add(hex);
    }
  });

  it('returns a copy: changing it does not change what comes next', () => {
    const a = randomBytesPooled(16);
    a.fill(0);
    const b = randomBytesPooled(16);
    assert.notDeepEqual(b, Buffer.alloc(16));
  });

  it('looks uniform: every byte value turns up in 64 KiB', () => {
    const counts = new Array(256).fill(0);
    for (let i = 0; i < 256; i++) for (const byte of randomBytesPooled(256)) counts[byte]++;
    assert.ok(counts.every((c) => c > 0), 'a byte value never appeared');
  });

  it('refuses sizes outside 1 to 256', () => {
    for (const n of [0, -1, 257, 1.5, Number.NaN]) assert.throws(() => randomBytesPooled(n), RangeError);
  });
});
