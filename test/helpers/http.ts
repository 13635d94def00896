import { rememberSecret, type TestServer } from './server.ts';

export type Response = { status: number; headers: Headers; body: any; text: string };

export type CallOptions = { key?: string; body?: unknown; headers?: Record<string, string>; contentType?: string; raw?: string };

/** One HTTP call to the server under test; the body is parsed when it is JSON. */
export async function call(server: TestServer | string, method: string, path: string, opts: CallOptions = {}): Promise<Response> {
  const base = typeof server === 'string' ? server : server.url;
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key !== undefined) headers['svc-api-key'] = opts.key;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/json';
  } else if (opts.raw !== undefined && opts.contentType) headers['content-type'] = opts.contentType;
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (/json/.test(res.headers.get('content-type') ?? '') && text) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** Creates an application with the tenant's management key and returns it with its key value. */
export async function createApplication(server: TestServer, body: Record<string, unknown>, key = server.key) {
  const res = await call(server, 'POST', '/applications', { key, body });
  if (res.status !== 201) throw new Error(`creating application failed: ${res.status} ${res.text}`);
  if (res.body.key) rememberSecret(res.body.key);
  return res.body as { id: string; key: string; [k: string]: unknown };
}

/** Creates a token with `key` and answers its id; anything but 201 fails the test. */
export async function createToken(server: TestServer, key: string, body: Record<string, unknown>): Promise<string> {
  const res = await call(server, 'POST', '/tokens', { key, body });
  if (res.status !== 201) throw new Error(`creating a token failed: ${res.status} ${res.text}`);
  return res.body.id;
}

/** A second tenant on the same server, for isolation tests. */
export async function createOtherTenant(server: TestServer) {
  const t = await server.running.services.tenants.initialize('Other tenant');
  rememberSecret(t.api_key);
  return t;
}
