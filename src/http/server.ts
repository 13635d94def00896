import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import secureJson from 'secure-json-parse';
import type { Logger } from '../logger.ts';
import { ApiError, errorHandler, sendProblem } from './errors.ts';

export type App = FastifyInstance;

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * Two validators: query strings, params and headers arrive as text and are coerced
 * (`?size=10` → 10, `?id=x` → ['x']); JSON bodies are taken exactly as sent, so a
 * number where a string belongs is an error rather than silently converted.
 */
function validators() {
  const base = { allErrors: true, useDefaults: true, removeAdditional: false as const, strict: false };
  const coercing = addFormats(new Ajv({ ...base, coerceTypes: 'array' }));
  const exact = addFormats(new Ajv({ ...base, coerceTypes: false }));
  return { coercing, exact };
}

export function createServer(log: Logger, opts: { bodyLimit?: number } = {}): FastifyInstance {
  const app = Fastify({
    loggerInstance: log,
    bodyLimit: opts.bodyLimit ?? 1_048_576,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    return503OnClosing: true,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const { coercing, exact } = validators();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? exact : coercing;
    return ajv.compile(schema);
  });

  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });

  // Every route must say who may call it; a forgotten declaration fails at start-up, not in production.
  app.addHook('onRoute', (route) => {
    if (route.config?.access === undefined && !route.url.startsWith('/docs')) {
      throw new Error(`route ${route.method} ${route.url} declares no config.access`);
    }
  });

  // An empty JSON body means "no body" (POST /sessions takes none); routes that need one say so in their schema.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }));
    } catch {
      done(ApiError.field('body', 'The body is not valid JSON.'), undefined);
    }
  });

  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, request, new ApiError(404, `No route ${request.method} ${request.url.split('?')[0]}.`)));
  return app as unknown as FastifyInstance;
}
