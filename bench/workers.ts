/**
 * The cluster's workers for bench/run.ts's scaling row. /health/ready answers as soon as
 * one worker listens, and a worker still starting under load can take many seconds more;
 * until it listens the primary hands every new connection to the others, so a run started
 * then measures fewer workers. Coffer logs "worker ready" only at info level, which the
 * bench does not run at (a log line per request), so readiness is read from the kernel:
 * a worker serves once it owns a connection accepted on the service's port.
 */
import fs from 'node:fs';
import net from 'node:net';
import { BenchError, type Server } from './lib.ts';
import { serviceProcesses } from './rss.ts';

/**
 * Resolves with the pids of the primary's `count` workers (its children other than
 * PostgreSQL) once each of them has answered a request: rounds of fresh connections, each
 * sending GET /health/ready and held open until the answer, after which the owner of each
 * accepted socket is looked up in /proc. Connections are handed out in turn, so a round of
 * 2 × count connections reaches every worker that listens.
 */
export async function waitWorkersServing(server: Server, count: number, timeoutMs: number): Promise<number[]> {
  const port = Number(new URL(server.url).port);
  const deadline = Date.now() + timeoutMs;
  let workers: number[] = [];
  let serving = new Set<number>();
  for (;;) {
    workers = serviceProcesses(server.pid).filter((p) => p.pid !== server.pid).map((p) => p.pid);
    if (workers.length === count) {
      const sockets = await Promise.all(Array.from({ length: 2 * count }, () => openAnswered(port)));
      try {
        const accepted = acceptedInodes(port);
        serving = new Set(workers.filter((pid) => socketInodes(pid).some((inode) => accepted.has(inode))));
      } finally {
        for (const s of sockets) s.destroy();
      }
      if (serving.size === count) return workers;
    }
    if (server.exited()) throw new BenchError(`${server.name} exited during start-up:\n${server.output()}`);
    if (Date.now() > deadline) {
      throw new BenchError(`${server.name}: ${workers.length} worker process(es), ${serving.size} serving after ${timeoutMs} ms, expected ${count}:\n${server.output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A connection to 127.0.0.1:port that has sent GET /health/ready and received the start of the answer, left open. */
function openAnswered(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /health/ready HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'));
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new BenchError(`no answer to GET /health/ready on port ${port} within 10 s`));
    }, 10_000);
    socket.once('data', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

/** Inodes of the established TCP sockets whose local end is 127.0.0.1:port: the server side of accepted connections. */
function acceptedInodes(port: number): Set<number> {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set<number>();
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    // sl, local_address, rem_address, st (01 = ESTABLISHED), …, inode (field 10).
    if (f[1] === local && f[3] === '01') inodes.add(Number(f[9]));
  }
  return inodes;
}

/** Inodes of the sockets among a process's open file descriptors. */
function socketInodes(pid: number): number[] {
  const inodes: number[] = [];
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return inodes;
  }
  for (const fd of fds) {
    try {
      const m = fs.readlinkSync(`/proc/${pid}/fd/${fd}`).match(/^socket:\[(\d+)\]$/);
      if (m) inodes.push(Number(m[1]));
    } catch {
      // closed meanwhile
    }
  }
  return inodes;
}
