import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7 } from '../../src/db/ids.ts';

describe('uuidv7', () => {
  it('is a version 7, variant 10 UUID', () => {
    for (let i = 0; i < 100; i++) assert.match(uuidv7(), /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('sorts in creation order, also within one millisecond', () => {
    const ids = Array.from({ length: 10_000 }, () => uuidv7());
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });

  it('carries the creation time in its first 48 bits', () => {
    const before = Date.now();
    const ms = parseInt(uuidv7().replace(/-/g, '').slice(0, 12), 16);
    assert.ok(ms >= before && ms <= Date.now() + 1);
  });
});
