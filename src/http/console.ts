import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError } from './errors.ts';

/**
 * The Console (docs/console.md): the single-page app built from console/ into console/dist by
 * `npm ci` (the `prepare` script), served at /console by this process. The files are read once,
 * at start; nothing in a request becomes a path. It calls the same API as everyone else, with
 * the member's session cookie and X-CSRF-Token: it has no route of its own besides its files.
 */
export const CONSOLE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

const DEFAULT_DIST = path.resolve(import.meta.dirname, '../../console/dist');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

type File = { body: Buffer; type: string };

/** Every file under `dir`, by its path relative to it with `/` separators; empty when the directory is missing. */
function readTree(dir: string): Map<string, File> {
  const files = new Map<string, File>();
  const walk = (sub: string) => {
    for (const entry of fs.readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = sub ? `${sub}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(rel);
      else if (entry.isFile()) files.set(rel, { body: fs.readFileSync(path.join(dir, rel)), type: TYPES[path.extname(entry.name)] ?? 'application/octet-stream' });
    }
  };
  if (fs.existsSync(path.join(dir, 'index.html'))) walk('');
  return files;
}

function secured(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer');
}

/** GET /console (a redirect to /console/), /console/ (the app) and /console/assets/… (hashed, cached for a year). */
export function registerConsoleRoutes(app: FastifyInstance, opts: { dist?: string } = {}): void {
  const files = readTree(opts.dist ?? DEFAULT_DIST);
  const index = files.get('index.html');
  const missing = () => new ApiError(503, 'The console is not built: run `npm ci` (or `npx vite build --config console/vite.config.ts`) and restart Coffer.');

  const sendIndex = (reply: FastifyReply) => {
    if (!index) throw missing();
    return secured(reply).header('content-type', index.type).header('cache-control', 'no-cache').send(index.body);
  };

  // With ignoreTrailingSlash, `/console` and `/console/` reach the same route: the raw URL tells them apart.
  app.get('/console', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const pathname = request.url.split('?')[0];
    // Relative, so that it holds behind a path prefix too.
    if (!pathname.endsWith('/')) return reply.code(308).header('location', 'console/').send();
    return sendIndex(reply);
  });

  app.get<{ Params: { '*': string } }>('/console/*', { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
    const rel = request.params['*'];
    if (rel === '' || rel === 'index.html') return sendIndex(reply);
    if (!index) throw missing();
    const file = files.get(rel);
    if (!file) throw new ApiError(404, `No console file ${rel}.`);
    // Vite names what it emits under assets/ by content hash: such a URL never changes meaning.
    const cache = rel.startsWith('assets/') ? 'public, max-age=31536000, immutable' : 'no-cache';
    return secured(reply).header('content-type', file.type).header('cache-control', cache).send(file.body);
  });
}
