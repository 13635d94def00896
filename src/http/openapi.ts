import type { FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { ProblemComponent } from './schemas.ts';

/**
 * The OpenAPI 3.1 document and the /docs page are generated from the route schemas;
 * nothing here is written by hand except the document's header.
 */
export async function registerOpenApi(app: FastifyInstance, version: string): Promise<void> {
  // Before any route: their error responses refer to it (schemas.ts problem()); the document lists it under components.
  app.addSchema(ProblemComponent);
  await app.register(swagger, {
    // Shared schemas appear under their own $id (components.schemas.Problem), not def-0: client generators name types after it.
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Coffer API',
        version,
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        description:
          'Token vault and payment orchestration. Authenticate with the `SVC-API-KEY` header. ' +
          'Errors are RFC 9457 problem details (`application/problem+json`).',
      },
      components: {
        securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'SVC-API-KEY' } },
      },
    },
    transform: ({ schema, url, route }) => {
      const access = route.config?.access;
      const secured = access !== undefined && access !== 'public';
      const out = { ...(schema ?? {}) } as Record<string, unknown>;
      if (!secured) {
        // Public operations say so (an empty list) rather than leave readers to guess. (A proxy
        // invocation's keys depend on the proxy: its description says which.)
        out.security = [];
      } else {
        out.security = [{ ApiKey: [] }];
        const perms = access.permissions.length ? `Permissions: \`${access.permissions.join('`, `')}\`.` : 'Any valid API key.';
        out.description = [out.description, perms].filter(Boolean).join('\n\n');
        // The same access, machine-readable: the isolation and fuzz suites derive their keys from it.
        out['x-permissions'] = access.permissions;
        if (access.types) out['x-application-types'] = access.types;
        if (access.sessions === false) out['x-sessions'] = false;
      }
      // PATCH bodies are merge patches (see http/merge-patch.ts); say so rather than application/json.
      if (out.body && [route.method].flat().includes('PATCH')) out.consumes = ['application/merge-patch+json'];
      return { schema: out as never, url };
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () => app.swagger());
}
