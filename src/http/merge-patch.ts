import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './errors.ts';
import { parseJsonBody } from './json-body.ts';

export const MERGE_PATCH = 'application/merge-patch+json';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** PATCH routes that are not resources (proxy invocations forward any body) set this to false. */
    mergePatch?: boolean;
  }
}

/** PATCH takes only RFC 7386 merge patches; any other content type is a 415. */
export function registerMergePatch(app: FastifyInstance): void {
  app.addContentTypeParser(MERGE_PATCH, { parseAs: 'string' }, (_req, body, done) => {
    // The same guards as application/json bodies: __proto__ and constructor.prototype refused, depth bounded.
    let value: unknown;
    try {
      value = parseJsonBody(body as string);
    } catch (err) {
      return done(err as ApiError, undefined);
    }
    done(null, value);
  });
  // Only PATCH routes carry the check.
  app.addHook('onRoute', (route) => {
    if (![route.method].flat().includes('PATCH') || route.config?.mergePatch === false) return;
    route.onRequest = [...[route.onRequest ?? []].flat(), requireMergePatch];
  });
}

async function requireMergePatch(request: FastifyRequest): Promise<void> {
  const type = (request.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== MERGE_PATCH) throw new ApiError(415, `PATCH requests need Content-Type: ${MERGE_PATCH}.`);
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function applyMergePatch<T>(target: T, patch: unknown): T {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch as T;
  const base: Record<string, Json> =
    target !== null && typeof target === 'object' && !Array.isArray(target) ? copy(target as Record<string, Json>) : {};
  for (const [key, value] of Object.entries(patch as Record<string, Json>)) {
    if (value === null) delete base[key];
    // Own data properties only: `base[key] = …` with key "__proto__" would replace the prototype.
    else define(base, key, applyMergePatch<Json | undefined>(Object.hasOwn(base, key) ? base[key] : undefined, value) as Json);
  }
  return base as T;
}

function define(object: Record<string, Json>, key: string, value: Json): void {
  Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
}

function copy(object: Record<string, Json>): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [key, value] of Object.entries(object)) define(out, key, value);
  return out;
}
