/**
 * Micro-benchmark of the warm path: the wall time of Sandbox.run for a trivial function,
 * which is all sandbox overhead (the warm context, with the module loaded, serves every
 * call). Printed, never asserted (timings vary by machine).
 * Run alone: npx node --test test/sandbox/overhead.test.ts
 */
import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { Sandbox } from '../../src/sandbox/index.ts';

const sb = new Sandbox();
after(() => sb.dispose());
const code = 'module.exports = async function (req) { return { raw: req.args }; };';
const req = { args: { a: 1 }, configuration: { K: 'v' } };
const once = () => sb.run({ tenantId: 't', cacheKey: 't:bench:1', code, req });

function percentiles(ms: number[]): string {
  ms.sort((a, b) => a - b);
  const at = (q: number) => ms[Math.min(ms.length - 1, Math.floor(ms.length * q))].toFixed(3);
  return `p50 ${at(0.5)} ms, p90 ${at(0.9)} ms, p99 ${at(0.99)} ms`;
}

async function sample(n: number, gapMs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (gapMs) await new Promise((r) => setTimeout(r, gapMs));
    const t = performance.now();
    const r = await once();
    out.push(performance.now() - t);
    assert.ok(r.ok);
  }
  return out;
}

it('warm sandbox overhead per call (trivial function)', async (t) => {
  await sample(300, 0); // warm up: isolate, compiled code, JIT
  t.diagnostic(`back to back (the isolate's thread still busy from the last call): ${percentiles(await sample(2000, 0))}`);
  t.diagnostic(`with 1 ms between calls (the isolate idle): ${percentiles(await sample(500, 1))}`);
});
