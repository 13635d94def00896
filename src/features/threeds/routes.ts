import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import type { TSchema } from 'typebox';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import { problems, WRITE } from '../../http/schemas.ts';
import { AuthenticateBody } from './authenticate-schema.ts';
import { CreateSessionBody } from './create-schema.ts';
import { checkedByRules, schemaChecker } from './formats.ts';
import { presentAuthentication, presentSession } from './present.ts';
import { AuthenticationResult, CreateSessionResponse, SERVICE_ERROR, SessionParams, SessionResponse } from './schema.ts';
import type { ThreeDSService } from './service.ts';

const tags = ['3ds'];

/**
 * checkedByRules for the body (the handler's validator reports its faults with the rules'),
 * the schema for the path: an id that is no UUID is a 400 before any query.
 */
const bodyByRules: FastifySchemaCompiler<TSchema> = (route) => {
  if (route.httpPart === 'body') return checkedByRules();
  const check = schemaChecker(route.schema);
  const part = route.httpPart === 'querystring' ? 'query' : (route.httpPart ?? 'params');
  return (value: unknown) => {
    const errors = new FieldErrorList();
    check(value, part, errors);
    return errors.empty ? { value } : { error: ApiError.validation(errors.errors) };
  };
};

/**
 * The 3DS API. The bodies' schemas are declared in full for the OpenAPI document but checked by
 * the service's validators (checkedByRules), which report schema and rule faults in one 400.
 * Create and authenticate are never replayed under SVC-IDEMPOTENCY-KEY: both call the 3DS
 * provider, which must not happen inside the transaction a key holds open; a repeated create
 * makes another session, a repeated authenticate is a 409.
 */
export function registerThreeDSRoutes(app: FastifyInstance, threeds: ThreeDSService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post('/3ds/sessions', {
    config: { access: { permissions: ['3ds:session:create'] }, idempotent: false },
    validatorCompiler: bodyByRules,
    schema: {
      tags,
      summary: 'Create a 3DS session for a card token or token intent',
      description:
        'Exactly one of `token_id` (needs token:use, transform reveal, on a container of the token), `token_intent_id`, or the ' +
        'deprecated `pan` (tokenized on the spot as a `card` token: needs token:create). Public keys and session keys may call it. ' +
        'The session lives 30 minutes (THREEDS_SESSION_TTL_MINUTES). See the 3-D Secure guide.',
      body: CreateSessionBody,
      response: { 201: CreateSessionResponse, ...problems(404, 422, 429, ...WRITE), ...SERVICE_ERROR },
    },
  }, async (request, reply) => reply.code(201).send(await threeds.create(principalOf(request), request.body, { ip: request.ip })));

  r.get('/3ds/sessions/:id', {
    config: { access: { permissions: ['3ds:session:read'] } },
    schema: { tags, summary: 'Get a 3DS session (never its card number)', params: SessionParams, response: { 200: SessionResponse, ...problems(404) } },
  }, async (request) => presentSession(await threeds.get(principalOf(request), request.params.id)));

  r.post('/3ds/sessions/:id/authenticate', {
    config: { access: { permissions: ['3ds:session:authenticate'] }, idempotent: false },
    validatorCompiler: bodyByRules,
    schema: {
      tags,
      summary: 'Authenticate a 3DS session (AReq/ARes): frictionless, or a challenge to run',
      description:
        'The whole body is validated against the session\'s type; one 400 names every field at fault. The session\'s card is ' +
        'read again as a use of its token (token:use, transform reveal) or intent. A session authenticates once: again is a 409. ' +
        '424: the Directory Server or 3DS Server failed (service_status 502 or 504: retry with a new session).',
      params: SessionParams,
      body: AuthenticateBody,
      response: { 200: AuthenticationResult, ...problems(404, 409, 422, ...WRITE), ...SERVICE_ERROR },
    },
  }, async (request) => presentAuthentication(await threeds.authenticate(principalOf(request), request.params.id, request.body)));

  r.get('/3ds/sessions/:id/challenge-result', {
    config: { access: { permissions: ['3ds:session:authenticate'] } },
    schema: {
      tags,
      summary: 'Get the final result of a 3DS session once its challenge has completed',
      description: '409 while there is no final result: the session has not been authenticated, or its challenge (or decoupled challenge) is not completed.',
      params: SessionParams,
      response: { 200: AuthenticationResult, ...problems(404, 409) },
    },
  }, async (request) => presentAuthentication(await threeds.challengeResult(principalOf(request), request.params.id)));
}
