import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cpuTimes, percent, stealShare } from '../../bench/steal.ts';

test('stealShare is the stolen part of the CPU time between two readings', () => {
  assert.equal(stealShare({ steal: 10, total: 1000 }, { steal: 30, total: 1200 }), 0.1);
  assert.equal(stealShare({ steal: 10, total: 1000 }, { steal: 10, total: 1400 }), 0);
  // No time passed, or a reading is missing: no figure rather than a division by zero.
  assert.equal(stealShare({ steal: 10, total: 1000 }, { steal: 10, total: 1000 }), undefined);
  assert.equal(stealShare(undefined, { steal: 10, total: 1000 }), undefined);
});

test('cpuTimes reads counters that only grow, steal among them', () => {
  const a = cpuTimes();
  if (process.platform !== 'linux') return assert.equal(a, undefined);
  assert.ok(a && a.total > 0 && a.steal >= 0 && a.steal <= a.total);
  let spin = 0;
  for (const until = Date.now() + 50; Date.now() < until; ) spin++;
  const b = cpuTimes()!;
  assert.ok(spin > 0 && b.total >= a.total && b.steal >= a.steal);
});

test('percent rounds a share, and shows a missing one as "-"', () => {
  assert.equal(percent(0.126), '13%');
  assert.equal(percent(undefined), '-');
});
