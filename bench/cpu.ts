/**
 * CPU time per request for bench/run.ts: what each process spent on a measured run, from
 * /proc (user plus system time, every thread), divided by the requests it served. Coffer is
 * the child and its workers (`main` is their event-loop threads alone; the rest of Coffer's
 * time is isolate threads, V8's helpers and libuv's pool), PostgreSQL its embedded server
 * with every backend, `bench` this process (autocannon), `baseline` the baseline child (the
 * proxies' destination). A ratio target is a budget of these: when the 2 cores are busy,
 * req/s is what they can do divided by the sum.
 */
import fs from 'node:fs';
import { databaseProcesses, serviceProcesses } from './rss.ts';

export type CpuSeconds = { coffer: number; main: number; postgres: number; bench: number; baseline: number };
export type CpuPerRequest = CpuSeconds & { total: number };

/** utime + stime of /proc/<path>/stat, in seconds (USER_HZ is 100 on Linux); 0 once gone. */
function statSeconds(path: string): number {
  try {
    const text = fs.readFileSync(`/proc/${path}/stat`, 'utf8');
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

/** The CPU time so far of each part; undefined where /proc has none (not Linux). */
export function cpuSeconds(coffer: number, baseline: number): CpuSeconds | undefined {
  if (!fs.existsSync(`/proc/${coffer}/stat`)) return undefined;
  const service = serviceProcesses(coffer);
  const own = process.cpuUsage();
  return {
    coffer: service.reduce((n, p) => n + statSeconds(String(p.pid)), 0),
    main: service.reduce((n, p) => n + statSeconds(`${p.pid}/task/${p.pid}`), 0),
    postgres: databaseProcesses(coffer).reduce((n, p) => n + statSeconds(String(p.pid)), 0),
    bench: (own.user + own.system) / 1e6,
    baseline: statSeconds(String(baseline)),
  };
}

/** Microseconds per request of each part between two readings. */
export function perRequest(before: CpuSeconds | undefined, after: CpuSeconds | undefined, requests: number): CpuPerRequest | undefined {
  if (!before || !after || requests <= 0) return undefined;
  const us = (k: keyof CpuSeconds) => Math.round(((after[k] - before[k]) * 1e6) / requests);
  const out = { coffer: us('coffer'), main: us('main'), postgres: us('postgres'), bench: us('bench'), baseline: us('baseline') };
  return { ...out, total: out.coffer + out.postgres + out.bench + out.baseline };
}
