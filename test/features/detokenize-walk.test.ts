import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Principal } from '../../src/access/principal.ts';
import { createDetokenizeService } from '../../src/features/detokenize/service.ts';
import type { TokenService } from '../../src/features/tokens/service.ts';

/** The detokenize walk over a token service that knows one token, to check the shape of what it returns. */
function walk() {
  const data = { number: '4242424242424242', name: 'Ada' };
  const tokens = {
    async resolveForUse(_p: Principal, ids: string[]) {
      return new Map([...new Set(ids)].map((id) => [id, { row: { id }, transform: 'reveal', data }]));
    },
  } as unknown as TokenService;
  const service = createDetokenizeService({
    tokens,
    vault: { expressionKeys: async () => () => undefined },
    logs: { writeItems: async () => {} },
    limitFor: async () => 100,
  });
  return (body: unknown) => service.detokenize({ tenantId: 't' } as Principal, body);
}

describe('the detokenize walk', () => {
  it('keeps every key of an object, in order, a "__proto__" key included as an own property', async () => {
    const body = JSON.parse('{"z":"{{ tok_1 | json: \'$.name\' }}","__proto__":{"n":"{{ tok_1 | last4 }}"},"a":[1,{"b":"{{ tok_1 | json: \'$.number\' }}"}],"c":null}');
    const out = (await walk()(body)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(out), ['z', '__proto__', 'a', 'c']);
    assert.equal(Object.getPrototypeOf(out), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(out, '__proto__')?.value, { n: '4242' });
    assert.equal(JSON.stringify(out), '{"z":"Ada","__proto__":{"n":"4242"},"a":[1,{"b":"4242424242424242"}],"c":null}');
  });

  it('leaves a body without expressions as it is, and builds a new one otherwise', async () => {
    const plain = { a: [1, 'x'], b: { c: null } };
    assert.equal(await walk()(plain), plain);
    const body = { keep: { same: true }, card: '{{ tok_1 | last4 }}' };
    const out = (await walk()(body)) as typeof body;
    assert.notEqual(out, body);
    assert.deepEqual(out, { keep: { same: true }, card: '4242' });
    assert.equal(body.card, '{{ tok_1 | last4 }}');
  });
});
