/**
 * Paired latency at one connection for bench/run.ts: two requests sent alternately over
 * one keep-alive connection, each timed in this process with process.hrtime (autocannon
 * records whole milliseconds, too coarse for a difference under 1 ms). Whatever the client
 * and the HTTP round trip cost is in both figures, so the difference of their p50s is what
 * the server does for one request and not the other.
 */
import { Client } from 'undici';
import { BenchError, type Req } from './lib.ts';

export type Latencies = { p50: number; p99: number; samples: number };
export type Paired = { a: Latencies; b: Latencies };

async function send(client: Client, req: Req, label: string): Promise<number> {
  const headers: Record<string, string> = { ...req.headers };
  let body: string | undefined;
  if (req.json !== undefined) {
    body = JSON.stringify(req.json);
    headers['content-type'] = 'application/json';
  }
  const t0 = process.hrtime.bigint();
  const res = await client.request({ method: (req.method ?? 'GET') as 'GET', path: req.path, headers, body });
  const text = await res.body.text();
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  if (res.statusCode < 200 || res.statusCode > 299) throw new BenchError(`${label}: ${req.method ?? 'GET'} ${req.path} answered ${res.statusCode}: ${text.slice(0, 500)}`);
  return ms;
}

/**
 * Sends `a` and `b` alternately for `seconds` on one connection to `url`, the order
 * swapped every pair (so neither always follows the other), and returns the p50 and p99
 * of each. A non-2xx answer fails the run.
 */
export async function pairedLatency(label: string, url: string, a: Req, b: Req, seconds: number): Promise<Paired> {
  const client = new Client(url, { pipelining: 1 });
  const la: number[] = [];
  const lb: number[] = [];
  try {
    const deadline = process.hrtime.bigint() + BigInt(seconds) * 1_000_000_000n;
    for (let i = 0; process.hrtime.bigint() < deadline; i++) {
      if (i % 2 === 0) {
        la.push(await send(client, a, label));
        lb.push(await send(client, b, label));
      } else {
        lb.push(await send(client, b, label));
        la.push(await send(client, a, label));
      }
    }
  } finally {
    await client.close();
  }
  if (la.length === 0) throw new BenchError(`${label}: no requests completed`);
  return { a: stats(la), b: stats(lb) };
}

function stats(latencies: number[]): Latencies {
  latencies.sort((x, y) => x - y);
  const at = (p: number) => Math.round(latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] * 1000) / 1000;
  return { p50: at(50), p99: at(99), samples: latencies.length };
}
