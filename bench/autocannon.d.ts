// The part of autocannon's API the bench uses (the package ships no types).
declare module 'autocannon' {
  /** `context` is the connection's own: what one request's onResponse keeps there, its next request's setupRequest reads. */
  export type Request = {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: Request, context: Record<string, unknown>) => Request;
    onResponse?: (status: number, body: string, context: Record<string, unknown>) => void;
  };

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
