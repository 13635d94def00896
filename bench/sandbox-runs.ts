/**
 * The sandbox's own time per run for bench/run.ts, as Coffer measures it: the histogram
 * `coffer_sandbox_run_duration_seconds` (purpose "reactor", outcome "ok") of its /metrics,
 * read before and after a measurement, so that only the runs in between count. The time of
 * a run is from the reactor service's call into the sandbox until its result is back: the
 * isolate's task, the trip there and back and the copies of the request and the result.
 */
import { BenchError } from './lib.ts';

/** Cumulative count of runs at or under each bucket's upper bound (seconds; Infinity last), by bound. */
export type RunBuckets = Map<number, number>;

export const RUN_HISTOGRAM = 'coffer_sandbox_run_duration_seconds_bucket';

/** The reactor runs that succeeded, by bucket, from the text of a /metrics answer. */
export function reactorRunBuckets(metricsText: string): RunBuckets {
  const buckets: RunBuckets = new Map();
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith(`${RUN_HISTOGRAM}{`)) continue;
    const m = /^\S+\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.purpose !== 'reactor' || labels.outcome !== 'ok') continue;
    buckets.set(labels.le === '+Inf' ? Infinity : Number(labels.le), Number(m[2]));
  }
  return buckets;
}

export async function scrapeRunBuckets(url: string, token: string): Promise<RunBuckets> {
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  if (!res.ok) throw new BenchError(`GET /metrics answered ${res.status}: ${text.slice(0, 300)}`);
  return reactorRunBuckets(text);
}

export type RunStats = {
  /** Runs between the two readings. */
  runs: number;
  /** The share of them that took at most `limitMs`. */
  withinLimit: number;
  /** The median, interpolated linearly within its bucket; undefined past the last finite bound or without runs. */
  p50Ms: number | undefined;
};

/**
 * What happened between two readings. `limitMs` must be one of the histogram's bounds, so
 * that the share within it is a count and not an estimate.
 */
export function runStats(before: RunBuckets, after: RunBuckets, limitMs: number): RunStats {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const delta = (le: number) => (after.get(le) ?? 0) - (before.get(le) ?? 0);
  const limit = limitMs / 1000;
  if (!after.has(limit)) throw new BenchError(`the sandbox's histogram has no bucket bound at ${limitMs} ms`);
  const runs = delta(Infinity);
  if (runs <= 0) return { runs: 0, withinLimit: 0, p50Ms: undefined };
  let p50Ms: number | undefined;
  let lower = 0;
  let below = 0;
  for (const le of bounds) {
    const count = delta(le);
    if (count >= runs / 2) {
      if (Number.isFinite(le)) p50Ms = (lower + ((le - lower) * (runs / 2 - below)) / (count - below)) * 1000;
      break;
    }
    lower = le;
    below = count;
  }
  return { runs, withinLimit: delta(limit) / runs, p50Ms: p50Ms === undefined ? undefined : Math.round(p50Ms * 1000) / 1000 };
}
