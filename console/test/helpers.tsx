import type { ComponentChildren } from 'preact';
import { vi } from 'vitest';
import { SessionContext, type Me } from '../src/session.tsx';

/** A problem+json answer as Coffer sends it (src/http/errors.ts). */
export function problem(status: number, detail: string, errors?: Record<string, string[]>, title = 'Bad Request'): Response {
  return new Response(JSON.stringify({ type: 'about:blank', title, status, detail, ...(errors ? { errors } : {}), request_id: 'r' }), {
    status,
    headers: { 'content-type': 'application/problem+json' },
  });
}

export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
}

export type Call = { url: string; method: string; body: unknown; headers: Record<string, string> };

/** Stubs fetch with `answer`, recording each call. */
export function stubFetch(answer: (url: string, method: string, body: unknown) => Response | Promise<Response>): Call[] {
  const calls: Call[] = [];
  vi.stubGlobal('fetch', vi.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = typeof init.body === 'string' && init.body ? JSON.parse(init.body) : undefined;
    calls.push({ url, method, body, headers: (init.headers ?? {}) as Record<string, string> });
    return answer(url, method, body);
  }));
  return calls;
}

const ADMIN_PERMISSIONS = ['application:read', 'application:create', 'application:update', 'application:delete', 'token:read', 'token:create', 'token:search', 'token:use', 'token:delete',
  'tenant:member:read', 'tenant:member:delete', 'tenant:invitation:read', 'tenant:invitation:create', 'tenant:invitation:update', 'tenant:invitation:delete', 'reactor:read', 'reactor:create', 'reactor:update', 'log:read'];
const READ_ONLY_PERMISSIONS = ADMIN_PERMISSIONS.filter((p) => p.endsWith(':read') || p === 'token:search');

export function me(role: 'OWNER' | 'ADMIN' | 'READ_ONLY' = 'ADMIN'): Me {
  return {
    user: { id: 'u1', email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace' },
    tenant_id: 't1',
    member_id: 'm1',
    role,
    permissions: role === 'READ_ONLY' ? READ_ONLY_PERMISSIONS : ADMIN_PERMISSIONS,
    session_expires_at: new Date(Date.now() + 3600_000).toISOString(),
    tenants: [{ id: 't1', name: 'Default', role, member_id: 'm1' }],
  };
}

export function AsMember(props: { role?: 'OWNER' | 'ADMIN' | 'READ_ONLY'; children: ComponentChildren }) {
  return <SessionContext.Provider value={me(props.role)}>{props.children}</SessionContext.Provider>;
}
