import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { uuidv7, uuidv7Floor } from '../../src/db/ids.ts';

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

  it('uuidv7Floor(ms) sorts above every id made before ms and at or below every id made from ms on', () => {
    const now = Date.now();
    const floor = uuidv7Floor(now);
    assert.match(floor, /^[0-9a-f]{8}-[0-9a-f]{4}-0000-0000-000000000000$/);
    assert.equal(parseInt(floor.replace(/-/g, '').slice(0, 12), 16), now);
    const before = uuidv7Floor(now - 1).replace(/0000-0000-000000000000$/, 'ffff-ffff-ffffffffffff');
    assert.ok(before < floor);
    assert.ok(uuidv7() >= floor, 'an id made now is not below the floor of now');
    assert.equal(uuidv7Floor(0), '00000000-0000-0000-0000-000000000000');
  });
});
