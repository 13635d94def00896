import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { reconciliationId, uuidFromReconciliationId } from '../../src/processors/reconciliation.ts';

describe('reconciliation_id', () => {
  it('matches Gr4vy\'s documented example (PAYMENTS-FACTS.md §6)', () => {
    assert.equal(reconciliationId('edc82971-de80-40a2-90a5-bce5cb5028de'), '7EgeeeTX0DS45RBDNt4AEY');
    assert.equal(uuidFromReconciliationId('7EgeeeTX0DS45RBDNt4AEY'), 'edc82971-de80-40a2-90a5-bce5cb5028de');
  });

  it('is always 22 base62 characters and round-trips', () => {
    fc.assert(fc.property(fc.uuid(), (uuid) => {
      const id = reconciliationId(uuid);
      assert.match(id, /^[0-9A-Za-z]{22}$/);
      assert.equal(uuidFromReconciliationId(id), uuid.toLowerCase());
    }), { numRuns: 2000 });
    assert.equal(reconciliationId(randomUUID().toUpperCase()).length, 22);
  });

  it('pads the small ones and reaches the largest', () => {
    assert.equal(reconciliationId('00000000-0000-0000-0000-000000000000'), '0'.repeat(22));
    assert.equal(reconciliationId('00000000-0000-0000-0000-00000000003e'), `${'0'.repeat(20)}10`);
    const max = 'ffffffff-ffff-ffff-ffff-ffffffffffff';
    assert.equal(uuidFromReconciliationId(reconciliationId(max)), max);
  });

  it('sorts (by code point) as the UUIDs do', () => {
    const cmp = (x: string, y: string) => (x < y ? -1 : x > y ? 1 : 0);
    fc.assert(fc.property(fc.uuid(), fc.uuid(), (a, b) => {
      assert.equal(cmp(reconciliationId(a), reconciliationId(b)), cmp(a.toLowerCase(), b.toLowerCase()));
    }));
  });

  it('rejects what is not one', () => {
    for (const bad of ['', 'x'.repeat(23), '7Egeee-X0DS45RBDNt4AEY', 'zzzzzzzzzzzzzzzzzzzzzz', 'é', 42 as unknown as string]) {
      assert.equal(uuidFromReconciliationId(bad), undefined, String(bad));
    }
    assert.equal(uuidFromReconciliationId('10'), '00000000-0000-0000-0000-00000000003e', 'an unpadded id is read too');
    for (const bad of ['', 'edc82971de8040a290a5bce5cb5028de', 'edc82971-de80-40a2-90a5-bce5cb5028dg']) assert.throws(() => reconciliationId(bad), TypeError);
  });
});
