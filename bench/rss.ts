/**
 * The service's memory for bench/run.ts: the resident set of the Coffer child and every
 * process under it (the cluster's workers), sampled from /proc every 200 ms for the whole
 * run. The embedded PostgreSQL is not the service: a process named `postgres` is left out
 * together with everything under it (its backends).
 */
import fs from 'node:fs';

/** One process of the service: pid and command name (/proc/<pid>/stat's comm). */
export type ServiceProcess = { pid: number; comm: string };

/** The Linux kernel's name for PostgreSQL's postmaster and its backends. */
const DATABASE = new Set(['postgres']);

/**
 * `root` and its descendants, except those named `postgres` (and theirs). Built from the
 * ppid of every process in /proc (this kernel may lack /proc/<pid>/task/<tid>/children).
 */
export function serviceProcesses(root: number): ServiceProcess[] {
  return processesUnder(root).service;
}

/** `root` and its descendants in one walk of /proc: the service's, and the embedded PostgreSQL's (its postmaster and backends). */
export function processesUnder(root: number): { service: ServiceProcess[]; database: ServiceProcess[] } {
  const out = { service: [] as ServiceProcess[], database: [] as ServiceProcess[] };
  for (const { pid, comm, database } of tree(root)) (database ? out.database : out.service).push({ pid, comm });
  return out;
}

/** `root` and its descendants, each marked as part of the database when it or an ancestor below `root` is a `postgres`. */
function tree(root: number): (ServiceProcess & { database: boolean })[] {
  const children = new Map<number, ServiceProcess[]>();
  let rootComm: string | undefined;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (!stat) continue;
    if (stat.pid === root) rootComm = stat.comm;
    const list = children.get(stat.ppid) ?? [];
    list.push({ pid: stat.pid, comm: stat.comm });
    children.set(stat.ppid, list);
  }
  if (rootComm === undefined) return [];
  const found = [{ pid: root, comm: rootComm, database: false }];
  for (let i = 0; i < found.length; i++) {
    for (const child of children.get(found[i].pid) ?? []) found.push({ ...child, database: found[i].database || DATABASE.has(child.comm) });
  }
  return found;
}

/** pid, comm and ppid from /proc/<pid>/stat; undefined once the process is gone. */
function readStat(pid: number): { pid: number; comm: string; ppid: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ')'.
    const close = text.lastIndexOf(')');
    const comm = text.slice(text.indexOf('(') + 1, close);
    const ppid = Number(text.slice(close + 2).split(' ')[1]);
    return { pid, comm, ppid };
  } catch {
    return undefined;
  }
}

/** VmRSS, its anonymous part RssAnon (never shared between these processes) and VmHWM (the kernel's own high-water mark of VmRSS) of one process, in bytes. */
export function memoryOf(pid: number): { rss: number; anon: number; hwm: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(text.match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'))?.[1] ?? NaN) * 1024;
    const m = { rss: kb('VmRSS'), anon: kb('RssAnon'), hwm: kb('VmHWM') };
    return Object.values(m).every(Number.isFinite) ? m : undefined;
  } catch {
    return undefined;
  }
}

/** The peak of one Coffer child (the single process, or a cluster's primary with its workers). */
export type ServerPeak = {
  server: string;
  /** Highest sum of VmRSS over the service's processes at one sample, in bytes. */
  sampledBytes: number;
  /** What ran at that sample (a scenario's label, or a phase such as "start-up"). */
  during: string;
  /** Each process at that sample, the Coffer child (the primary) first: VmRSS and RssAnon in bytes. */
  processes: { pid: number; rss: number; anon: number }[];
  /** Highest VmHWM of any one of its processes, in bytes: catches a spike between two samples. */
  processHwmBytes: number;
  samples: number;
  /** The largest sampled sum during each phase, in the order the phases first ran. */
  phases: { during: string; bytes: number }[];
};

/**
 * Samples the service's memory every `intervalMs` until stopped. `root` gives the Coffer
 * child running now (it changes when the bench restarts Coffer), or undefined between
 * two of them; `phase` is set by the bench to what runs, for the report.
 */
export class RssSampler {
  phase = 'start-up';
  private readonly timer: NodeJS.Timeout;
  private readonly root: () => { pid: number; name: string } | undefined;
  private readonly peaks = new Map<string, ServerPeak>();

  constructor(root: () => { pid: number; name: string } | undefined, intervalMs = 200) {
    this.root = root;
    this.timer = setInterval(() => this.sample(), intervalMs);
    this.sample();
  }

  /** One sample now (also taken on every tick). */
  sample(): void {
    const server = this.root();
    if (server === undefined) return;
    const procs = serviceProcesses(server.pid);
    if (procs.length === 0) return;
    let peak = this.peaks.get(server.name);
    if (!peak) {
      peak = { server: server.name, sampledBytes: 0, during: '', processes: [], processHwmBytes: 0, samples: 0, phases: [] };
      this.peaks.set(server.name, peak);
    }
    const now: ServerPeak['processes'] = [];
    for (const p of procs) {
      const m = memoryOf(p.pid);
      if (!m) continue;
      now.push({ pid: p.pid, rss: m.rss, anon: m.anon });
      peak.processHwmBytes = Math.max(peak.processHwmBytes, m.hwm);
    }
    const total = now.reduce((sum, p) => sum + p.rss, 0);
    peak.samples++;
    const phase = peak.phases.find((p) => p.during === this.phase);
    if (phase) phase.bytes = Math.max(phase.bytes, total);
    else peak.phases.push({ during: this.phase, bytes: total });
    if (total > peak.sampledBytes) Object.assign(peak, { sampledBytes: total, during: this.phase, processes: now });
  }

  /** Stops sampling (after a last sample) and returns the peak of each Coffer child, in the order they ran. */
  stop(): ServerPeak[] {
    this.sample();
    clearInterval(this.timer);
    return [...this.peaks.values()].map((p) => ({ ...p, phases: p.phases.map((x) => ({ ...x })) }));
  }
}
