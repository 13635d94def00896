/**
 * CPU steal for bench/run.ts: the share of the machine's CPU time that the host gave to
 * someone else while a run was measured (/proc/stat's `steal`, over all of that line's
 * counters). On a shared virtual machine it comes and goes by the minute; a run that lost a
 * large share measured the host as much as Coffer, so the report names such runs.
 */
import fs from 'node:fs';

/** Above this share of CPU time lost to the host during any run of a row, the report warns about that row. */
export const STEAL_WARNING = 0.1;

export type CpuTimes = { steal: number; total: number };

/** The machine's CPU counters since boot (in ticks), or undefined where /proc/stat has none. */
export function cpuTimes(): CpuTimes | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0];
    if (!line.startsWith('cpu ')) return undefined;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
    const fields = line.trim().split(/\s+/).slice(1, 9).map(Number);
    if (fields.length < 8 || fields.some((n) => !Number.isFinite(n))) return undefined;
    return { steal: fields[7], total: fields.reduce((a, b) => a + b, 0) };
  } catch {
    return undefined;
  }
}

/** The share of CPU time stolen between two readings (0 to 1), or undefined without both. */
export function stealShare(before: CpuTimes | undefined, after: CpuTimes | undefined): number | undefined {
  if (!before || !after) return undefined;
  const total = after.total - before.total;
  return total > 0 ? (after.steal - before.steal) / total : undefined;
}

/** "12%", or "-" for no reading. */
export function percent(share: number | undefined): string {
  return share === undefined ? '-' : `${Math.round(share * 100)}%`;
}
