import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyApiReferenceOptions } from '@scalar/fastify-api-reference';

type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

/** The pages the renderer serves under its prefix (with ignoreTrailingSlash, `/docs` reaches `/docs/`). */
const PAGES = ['/docs/', '/docs/js/scalar.js'] as const;

/**
 * Scalar's API reference at /docs, loaded on the first request for it rather than at start-up.
 * `@scalar/fastify-api-reference` holds its 4.9 MB browser script as a string in its module, so
 * importing it costs every process ~19 MB of heap (the module's source and the string), 30–45
 * MB of RSS in all, whether or not anyone opens /docs. The routes are declared here, at
 * start-up, as Fastify requires; the first request imports the plugin, has it declare its
 * routes to a collector, and from then on each request is answered by the plugin's own handler
 * for its path.
 */
export function registerApiReference(docs: FastifyInstance, options: FastifyApiReferenceOptions): void {
  let handlers: Promise<Map<string, Handler>> | undefined;
  for (const url of PAGES) {
    docs.get(url, { config: { access: 'public' }, schema: { hide: true } }, async (request, reply) => {
      handlers ??= loadHandlers(docs, options);
      const handler = (await handlers).get(url);
      if (!handler) throw new Error(`the API reference plugin declared no route ${url}`);
      return handler(request, reply);
    });
  }
}

/** The plugin's handlers by path: it is run against an object that only records the routes it declares. */
async function loadHandlers(docs: FastifyInstance, options: FastifyApiReferenceOptions): Promise<Map<string, Handler>> {
  const { default: plugin } = await import('@scalar/fastify-api-reference');
  const handlers = new Map<string, Handler>();
  const collector = {
    route: (route: { url: string; handler: Handler }) => handlers.set(route.url, route.handler),
    initialConfig: docs.initialConfig,
    hasPlugin: () => false,
    log: docs.log,
  };
  await new Promise<void>((resolve, reject) => plugin(collector as never, options, (err?: Error) => (err ? reject(err) : resolve())));
  return handlers;
}
