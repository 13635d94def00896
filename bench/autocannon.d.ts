// The part of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  export type Request = { method?: string; path?: string; headers?: Record<string, string>; body?: string };

  export type Options = {
    url: string;
    connections?: number;
    duration?: number;
    requests?: Request[];
  };

  export type Histogram = { average: number; p50: number; p99: number; [k: string]: number };

  export type Result = {
    requests: Histogram;
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    statusCodeStats: Record<string, { count: number }>;
  };

  export default function autocannon(opts: Options): Promise<Result>;
}
