import { randomUUID } from 'node:crypto';
import http, { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { type ConnectionError, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { Logger } from '../logger.ts';
import { addCorsHeaders } from './cors.ts';
import { attachLazySchemas, LazySchemas } from './lazy-schemas.ts';
import { ApiError, errorHandler, sendProblem } from './errors.ts';
import { MAX_BODY_BYTES, parseJsonBody, refuseUnstorable } from './json-body.ts';

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

export function createServer(log: Logger, opts: { bodyLimit?: number; requestTimeoutMs?: number } = {}): FastifyInstance {
  // Validators and response serializers are compiled when a route first needs them (./lazy-schemas.ts).
  const schemas = new LazySchemas();
  const app = Fastify({
    loggerInstance: log,
    bodyLimit: opts.bodyLimit ?? MAX_BODY_BYTES,
    // A client has 2 minutes to send its whole request (headers and body): one that trickles
    // bytes must not hold a connection, and the memory of its half-read body, forever. Node
    // looks for such requests every second (its default, 30 s, let them run on that long).
    // Fastify passes no such option on, so the server is made here, with Fastify's keep-alive.
    serverFactory: (handler) => {
      const server = http.createServer({ requestTimeout: opts.requestTimeoutMs ?? 120_000, connectionsCheckingInterval: 1000 }, handler);
      server.keepAliveTimeout = 72_000;
      return server;
    },
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 500 },
    return503OnClosing: true,
    frameworkErrors: routingError,
    clientErrorHandler: connectionError,
    schemaController: schemas.schemaController(),
  }).withTypeProvider<TypeBoxTypeProvider>();

  const { coercing, exact } = validators();
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? exact : coercing;
    return schemas.validator(() => ajv.compile(schema));
  });
  attachLazySchemas(app, schemas);

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

  // Text PostgreSQL cannot store (U+0000, unpaired surrogates) in a query string or path parameter is
  // refused with its field path, not left to fail in a query (500). JSON bodies: see parseJsonBody.
  app.addHook('onRoute', (route) => {
    if (!route.schema?.querystring && !route.schema?.params) return;
    route.preValidation = [...[route.preValidation ?? []].flat(), refuseUnstorableInUrl];
  });

  // An empty JSON body means "no body" (POST /sessions takes none); routes that need one say so in their schema.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = (body as string).trim();
    if (text === '') return done(null, undefined);
    let value: unknown;
    try {
      value = parseJsonBody(text);
    } catch (err) {
      return done(err as ApiError, undefined);
    }
    done(null, value);
  });

  app.setErrorHandler(errorHandler);
  app.setNotFoundHandler((request, reply) => sendProblem(reply, request, new ApiError(404, `No route ${request.method} ${request.url.split('?')[0]}.`)));
  return app as unknown as FastifyInstance;
}

function refuseUnstorableInUrl(request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  try {
    refuseUnstorable(request.query, 'query');
    refuseUnstorable(request.params, 'params');
  } catch (err) {
    return done(err as Error);
  }
  done();
}

/** Errors raised before any route is found answer problem details like the rest (Fastify's own are plain JSON). */
function routingError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  // No onRequest hook runs for these, the CORS one included.
  addCorsHeaders(request, reply);
  let error: ApiError;
  if (err.code === 'FST_ERR_BAD_URL') error = ApiError.field('path', 'is not a valid URL path: a percent-encoding is malformed');
  else if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') error = new ApiError(414, 'A segment of the URL path is too long.');
  else {
    request.log.error({ err: { message: err.message, code: err.code } }, 'unhandled routing error');
    error = new ApiError(500, 'An unexpected error occurred. Quote the request id when reporting it.');
  }
  sendProblem(reply, request, error);
}

/**
 * Requests Node's HTTP parser refuses (headers over the size limit, malformed HTTP) never
 * reach Fastify: they get problem details too, written on the socket, which then closes.
 */
function connectionError(this: FastifyInstance, err: ConnectionError, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  let error: ApiError;
  if (err.code === 'HPE_HEADER_OVERFLOW') error = new ApiError(431, 'The request headers are too large.');
  else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') error = new ApiError(408, 'The request did not arrive in time.');
  else error = ApiError.field(/HEADER|CONTENT_LENGTH|TRANSFER_ENCODING/.test(err.code) ? 'headers' : 'request', 'is not valid HTTP/1.1');
  const id = randomUUID();
  this.log.debug({ err: { message: err.message, code: err.code }, request_id: id }, 'request refused by the HTTP parser');
  const body = JSON.stringify(error.toProblem(id));
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nConnection: close\r\nContent-Type: application/problem+json\r\n` +
        `X-Request-Id: ${id}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}
