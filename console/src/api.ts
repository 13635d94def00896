/**
 * The one way the console talks to Coffer: the same API everyone uses, with the member's
 * session. The `coffer_session` cookie (HttpOnly) goes by itself; every request repeats the
 * readable `coffer_csrf` cookie in `X-CSRF-Token`. A problem+json answer becomes an ApiProblem
 * whose `fieldErrors` are keyed by the API's field paths (`body.name`, `body.rules[0].priority`).
 */

/** Coffer's base URL: the parent of /console/, so that a path prefix in front of Coffer is kept. */
export function apiBase(location: { pathname: string; origin: string } = window.location): string {
  const path = location.pathname;
  const at = path.lastIndexOf('/console/');
  const prefix = at >= 0 ? path.slice(0, at + 1) : '/';
  return location.origin + prefix;
}

export function csrfToken(): string {
  const m = /(?:^|;\s*)coffer_csrf=([^;]*)/.exec(document.cookie);
  return m ? decodeURIComponent(m[1]) : '';
}

export type FieldErrors = Record<string, string[]>;

export class ApiProblem extends Error {
  readonly status: number;
  readonly title: string;
  readonly detail: string;
  readonly fieldErrors: FieldErrors;
  /** The whole problem document, for members some problems add (a reactor run's `data`, `console`). */
  readonly body: Record<string, unknown>;
  constructor(status: number, title: string, detail: string, fieldErrors: FieldErrors = {}, body: Record<string, unknown> = {}) {
    super(detail || title);
    this.name = 'ApiProblem';
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.fieldErrors = fieldErrors;
    this.body = body;
  }
}

/** Query parameters: arrays repeat the name; empty strings and undefined are left out. */
export type Query = Record<string, string | number | boolean | undefined | null | (string | number)[]>;

export function queryString(query: Query | undefined): string {
  if (!query) return '';
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue;
    if (Array.isArray(v)) v.forEach((x) => q.append(k, String(x)));
    else q.append(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

export type RequestOptions = { query?: Query; body?: unknown; headers?: Record<string, string>; signal?: AbortSignal };

/** Turns any failed answer into an ApiProblem (problem+json when Coffer sent one). */
export async function problemOf(res: Response): Promise<ApiProblem> {
  const text = await res.text();
  try {
    const p = JSON.parse(text) as { title?: string; detail?: string; errors?: FieldErrors };
    return new ApiProblem(res.status, p.title ?? res.statusText, p.detail ?? '', p.errors ?? {}, p as Record<string, unknown>);
  } catch {
    return new ApiProblem(res.status, res.statusText || 'Error', text.slice(0, 500));
  }
}

/** Called with every 401, so the app can show the sign-in page. */
let onUnauthorized: (() => void) | undefined;
export function setUnauthorizedHandler(fn: (() => void) | undefined): void {
  onUnauthorized = fn;
}

export async function request<T = unknown>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', 'x-csrf-token': csrfToken(), ...opts.headers };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res: Response;
  try {
    res = await fetch(apiBase() + path.replace(/^\//, '') + queryString(opts.query), { method, headers, body, credentials: 'same-origin', signal: opts.signal });
  } catch (err) {
    throw new ApiProblem(0, 'Network error', `Coffer could not be reached: ${(err as Error).message}`);
  }
  if (!res.ok) {
    const problem = await problemOf(res);
    if (res.status === 401 && path !== '/me' && onUnauthorized) onUnauthorized();
    throw problem;
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const api = {
  get: <T>(path: string, query?: Query) => request<T>('GET', path, { query }),
  post: <T>(path: string, body?: unknown, query?: Query) => request<T>('POST', path, { body, query }),
  put: <T>(path: string, body?: unknown) => request<T>('PUT', path, { body }),
  patch: <T>(path: string, body?: unknown) => request<T>('PATCH', path, { body, headers: { 'content-type': 'application/merge-patch+json' } }),
  del: (path: string) => request<void>('DELETE', path),
};

export type OffsetPage<T> = { pagination: { total_items: number; page_number: number; page_size: number; total_pages: number }; data: T[] };
export type CursorPage<T> = { pagination: { next?: string; page_size: number }; data: T[] };

/** The field errors at `path` and below it (`body.rules` also takes `body.rules[0].priority`), for a section of a form. */
export function errorsUnder(errors: FieldErrors, path: string): string[] {
  return Object.entries(errors)
    .filter(([k]) => k === path || k.startsWith(`${path}.`) || k.startsWith(`${path}[`))
    .flatMap(([k, v]) => (k === path ? v : v.map((m) => `${k.slice(path.length).replace(/^\./, '')}: ${m}`)));
}
