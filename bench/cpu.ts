/**
 * CPU time per request for bench/run.ts: what each process spent on a measured run, from
 * /proc (user plus system time, every thread), divided by the requests it served. Coffer is
 * the child and its workers (`main` is their event-loop threads alone; the rest of Coffer's
 * time is isolate threads, V8's helpers and libuv's pool), PostgreSQL its embedded server
 * with every backend, `bench` this process (autocannon), `baseline` the baseline child (the
 * proxies' destination), `minimal` the minimal programs (bench/minimal-*.ts) with their
 * sandbox process. A ratio target is a budget of these: when the 2 cores are busy,
 * req/s is what they can do divided by the sum.
 */
import fs from 'node:fs';
import { processesUnder } from './rss.ts';

/** CPU seconds so far by pid, for the parts made of several processes; single numbers for the rest. */
export type CpuReading = { coffer: Map<number, number>; main: Map<number, number>; sandbox: Map<number, number>; postgres: Map<number, number>; bench: number; baseline: number; minimal: Map<number, number> };
export type CpuPerRequest = { coffer: number; main: number; sandbox: number; postgres: number; bench: number; baseline: number; minimal: number; total: number };

/**
 * utime + stime of /proc/<path>/stat (a process, or `<pid>/task/<tid>` for one thread), in
 * seconds; undefined once it is gone.
 */
export function statSeconds(path: string): number | undefined {
  try {
    const text = fs.readFileSync(`/proc/${path}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, utime 14, stime 15 (1-based); USER_HZ is 100 on Linux.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return undefined;
  }
}

/** Whether `pid` runs Coffer's sandbox process (its command line names the child's module). */
function isSandboxProcess(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('sandbox/process/child');
  } catch {
    return false;
  }
}

/** The CPU time so far of each part; undefined where /proc has none (not Linux). */
export function cpuSeconds(coffer: number, baseline: number, minimal: number[] = []): CpuReading | undefined {
  if (!fs.existsSync(`/proc/${coffer}/stat`)) return undefined;
  const { service, database } = processesUnder(coffer);
  const own = process.cpuUsage();
  return {
    coffer: new Map(service.map((p) => [p.pid, statSeconds(String(p.pid)) ?? 0])),
    main: new Map(service.map((p) => [p.pid, statSeconds(`${p.pid}/task/${p.pid}`) ?? 0])),
    // Coffer's sandbox processes (src/sandbox/process/child.ts), every thread: part of `coffer`.
    sandbox: new Map(service.filter((p) => isSandboxProcess(p.pid)).map((p) => [p.pid, statSeconds(String(p.pid)) ?? 0])),
    postgres: new Map(database.map((p) => [p.pid, statSeconds(String(p.pid)) ?? 0])),
    bench: (own.user + own.system) / 1e6,
    baseline: statSeconds(String(baseline)) ?? 0,
    // A minimal program and its descendants (react.minimal's sandbox process).
    minimal: new Map(minimal.flatMap((root) => processesUnder(root).service).map((p) => [p.pid, statSeconds(String(p.pid)) ?? 0])),
  };
}

/**
 * What each process of `after` spent since `before` (all of it for one started since). A
 * process that ended in between (a PostgreSQL backend whose client closed) takes its time
 * with it: the figure can only be short by that, never negative.
 */
function spent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, seconds] of after) total += Math.max(0, seconds - (before.get(pid) ?? 0));
  return total;
}

/** Microseconds per request of each part between two readings. */
export function perRequest(before: CpuReading | undefined, after: CpuReading | undefined, requests: number): CpuPerRequest | undefined {
  if (!before || !after || requests <= 0) return undefined;
  const us = (seconds: number) => Math.round((seconds * 1e6) / requests);
  const out = {
    coffer: us(spent(before.coffer, after.coffer)),
    main: us(spent(before.main, after.main)),
    sandbox: us(spent(before.sandbox, after.sandbox)),
    postgres: us(spent(before.postgres, after.postgres)),
    bench: us(after.bench - before.bench),
    baseline: us(Math.max(0, after.baseline - before.baseline)),
    minimal: us(spent(before.minimal, after.minimal)),
  };
  return { ...out, total: out.coffer + out.postgres + out.bench + out.baseline + out.minimal };
}
