import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reactorRunBuckets, runStats } from '../../bench/sandbox-runs.ts';

const H = 'coffer_sandbox_run_duration_seconds_bucket';
/** A /metrics text with the reactor histogram's cumulative counts at 0.5 ms, 1 ms, 2.5 ms and +Inf, plus lines to ignore. */
function metrics(counts: [number, number, number, number]): string {
  return [
    '# HELP coffer_sandbox_run_duration_seconds Wall time of sandbox runs, by purpose and outcome.',
    `${H}{le="0.0005",purpose="reactor",outcome="ok"} ${counts[0]}`,
    `${H}{le="0.001",purpose="reactor",outcome="ok"} ${counts[1]}`,
    `${H}{le="0.0025",purpose="reactor",outcome="ok"} ${counts[2]}`,
    `${H}{le="+Inf",purpose="reactor",outcome="ok"} ${counts[3]}`,
    `${H}{le="0.0005",purpose="reactor",outcome="user_error"} 999`,
    `${H}{le="0.0005",purpose="proxy_request",outcome="ok"} 999`,
    'coffer_sandbox_run_duration_seconds_count{purpose="reactor",outcome="ok"} 1',
  ].join('\n');
}

test('reactorRunBuckets keeps the successful reactor runs only, by bound', () => {
  const b = reactorRunBuckets(metrics([1, 2, 3, 4]));
  assert.deepEqual([...b], [[0.0005, 1], [0.001, 2], [0.0025, 3], [Infinity, 4]]);
});

test('runStats counts only the runs between two readings, and interpolates the median within its bucket', () => {
  const before = reactorRunBuckets(metrics([10, 10, 10, 10]));
  // 100 new runs: 20 under 0.5 ms, 60 more by 1 ms, 15 more by 2.5 ms, 5 slower.
  const after = reactorRunBuckets(metrics([30, 90, 105, 110]));
  const s = runStats(before, after, 1);
  assert.equal(s.runs, 100);
  assert.equal(s.withinLimit, 0.8);
  // The 50th run is the 30th of the 60 in (0.5, 1] ms: halfway.
  assert.equal(s.p50Ms, 0.75);
});

test('runStats: no median past the last finite bound, none without runs, and a limit must be a bound', () => {
  const none = reactorRunBuckets(metrics([0, 0, 0, 0]));
  assert.equal(runStats(none, reactorRunBuckets(metrics([0, 1, 1, 10])), 1).p50Ms, undefined);
  assert.deepEqual(runStats(none, none, 1), { runs: 0, withinLimit: 0, p50Ms: undefined });
  assert.throws(() => runStats(none, none, 2), /no bucket bound at 2 ms/);
});
