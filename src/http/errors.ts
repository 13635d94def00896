import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { childPath, pointerPath, truncated } from './field-path.ts';

export type FieldErrors = Record<string, string[]>;

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  424: 'Failed Dependency',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The one error type: every failure a client may see is thrown as an ApiError. */
export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  readonly errors: FieldErrors | undefined;
  /** Sent as Retry-After, for a refusal that clears by itself (a busy gate). */
  retryAfterSeconds: number | undefined;

  constructor(status: number, detail: string, errors?: FieldErrors) {
    super(detail);
    this.name = 'ApiError';
    this.status = status;
    this.detail = detail;
    this.errors = errors;
  }

  static validation(errors: FieldErrors, detail = 'The request is invalid.'): ApiError {
    return new ApiError(400, detail, errors);
  }

  static field(field: string, message: string): ApiError {
    return new ApiError(400, message, { [field]: [message] });
  }

  static unauthorized(detail = 'A valid SVC-API-KEY header is required.'): ApiError {
    return new ApiError(401, detail);
  }

  static forbidden(detail = 'The API key does not grant access to this operation.'): ApiError {
    return new ApiError(403, detail);
  }

  static notFound(what = 'resource'): ApiError {
    return new ApiError(404, `The ${what} was not found.`);
  }

  static conflict(detail: string): ApiError {
    return new ApiError(409, detail);
  }

  static unprocessable(detail: string, errors?: FieldErrors): ApiError {
    return new ApiError(422, detail, errors);
  }

  toProblem(requestId: string): Problem {
    return {
      type: `about:blank`,
      title: TITLES[this.status] ?? 'Error',
      status: this.status,
      detail: this.detail,
      ...(this.errors ? { errors: this.errors } : {}),
      request_id: requestId,
    };
  }
}

export type Problem = {
  type: string;
  title: string;
  status: number;
  detail: string;
  errors?: FieldErrors;
  request_id: string;
};

/**
 * How many fields one problem names at most: every problem at once, but a request with a huge
 * invalid array (one error per item) must not buy a response many times its size.
 */
export const MAX_FIELD_ERRORS = 100;

/** Collects field errors so a service can report every problem at once (up to MAX_FIELD_ERRORS fields). */
export class FieldErrorList {
  readonly errors: FieldErrors = {};
  private fields = 0;
  add(field: string, message: string): void {
    const messages = this.errors[field];
    if (messages) messages.push(message);
    else if (this.fields < MAX_FIELD_ERRORS) {
      this.fields++;
      this.errors[field] = [message];
    }
  }
  get full(): boolean {
    return this.fields >= MAX_FIELD_ERRORS;
  }
  get empty(): boolean {
    return this.fields === 0;
  }
  throwIfAny(): void {
    if (!this.empty) throw ApiError.validation(this.errors);
  }
}

export type AjvError = { instancePath: string; keyword: string; message?: string; params: Record<string, unknown>; propertyName?: string };

/**
 * Adds each validation failure as a field error. A key that fails a map's `propertyNames`
 * comes as two: the key's own failure (which names it) and a generic "property name must be
 * valid", which adds nothing and is left out. `data` is the value validated: it tells an
 * array index from a key made of digits in the paths (see pointerPath).
 */
export function addValidationErrors(errors: FieldErrorList, prefix: string, failures: AjvError[], data: unknown): void {
  for (const v of failures) {
    if (errors.full) return;
    if (v.keyword === 'propertyNames') continue;
    errors.add(fieldPath(prefix, v, data), validationMessage(v));
  }
}

/** The parts of a request Fastify validates, by its validationContext: their names in field paths, and where the request holds them. */
const REQUEST_PARTS: Record<string, { name: string; value: (request: FastifyRequest) => unknown }> = {
  body: { name: 'body', value: (r) => r.body },
  querystring: { name: 'query', value: (r) => r.query },
  params: { name: 'params', value: (r) => r.params },
  headers: { name: 'headers', value: (r) => r.headers },
};

/**
 * Turns Fastify's schema validation failures into field paths like `body.rules[0].priority`.
 * `request` holds the values validated (Ajv coerces and fills in defaults in place), which
 * the paths are read against.
 */
function fromValidation(err: FastifyError, request: FastifyRequest | undefined): ApiError {
  const context = err.validationContext ?? 'body';
  const part = Object.hasOwn(REQUEST_PARTS, context) ? REQUEST_PARTS[context] : undefined;
  const name = part?.name ?? context;
  const errors = new FieldErrorList();
  addValidationErrors(errors, name, (err.validation ?? []) as AjvError[], request && part?.value(request));
  if (errors.empty) errors.add(name, err.message);
  return ApiError.validation(errors.errors);
}

/** `body` + `/rules/0/priority` → `body.rules[0].priority`, naming the missing or unknown property too. */
export function fieldPath(prefix: string, v: AjvError, data: unknown): string {
  const field = pointerPath(prefix, v.instancePath, data);
  if (v.keyword === 'required') return childPath(field, String(v.params.missingProperty));
  if (v.keyword === 'additionalProperties') return childPath(field, String(v.params.additionalProperty));
  return field;
}

/** How much of a key a message quotes. */
const QUOTED_KEY_CHARACTERS = 40;

export function validationMessage(v: AjvError): string {
  if (v.propertyName !== undefined) {
    return `has a key ${JSON.stringify(truncated(v.propertyName, QUOTED_KEY_CHARACTERS))} that ${keywordMessage(v)}`;
  }
  return keywordMessage(v);
}

/** How much of a long list of allowed values one message quotes: a hundred invalid items must not buy a huge answer. */
const ENUM_MESSAGE_CHARACTERS = 400;

function enumMessage(values: unknown[]): string {
  const all = `must be one of: ${values.join(', ')}`;
  if (all.length <= ENUM_MESSAGE_CHARACTERS) return all;
  let shown = 0;
  let length = 'must be one of: '.length;
  while (shown < values.length && length + String(values[shown]).length + 2 <= ENUM_MESSAGE_CHARACTERS) length += String(values[shown++]).length + 2;
  return `must be one of: ${values.slice(0, shown).join(', ')}, … (${values.length} values in all; see the API reference)`;
}

function keywordMessage(v: AjvError): string {
  switch (v.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a known property';
    case 'enum':
      return enumMessage(v.params.allowedValues as unknown[]);
    case 'const':
      return `must be ${JSON.stringify(v.params.allowedValue)}`;
    case 'format':
      return `must be a valid ${String(v.params.format)}`;
    case 'maxLength':
      return `must be at most ${v.params.limit} characters`;
    case 'minLength':
      return v.params.limit === 1 ? 'must not be empty' : `must be at least ${v.params.limit} characters`;
    case 'type':
      return `must be ${typeNames(v.params.type)}`;
    case 'uniqueItems':
      return `must not repeat an item (items ${Math.min(Number(v.params.i), Number(v.params.j))} and ${Math.max(Number(v.params.i), Number(v.params.j))} are the same)`;
    default:
      return v.message ?? 'is invalid';
  }
}

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  array: 'an array',
  string: 'a string',
  number: 'a number',
  integer: 'a whole number',
  boolean: 'true or false',
  null: 'null',
};

/** Ajv's `type` param ("object,null", or an array) in words: "an object or null", not "must be object,null". */
function typeNames(type: unknown): string {
  const names = (Array.isArray(type) ? type : String(type).split(',')).map((t) => TYPE_NAMES[String(t)] ?? String(t));
  return names.length > 1 ? `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}` : names[0];
}

/**
 * Normalises anything thrown while handling a request into an ApiError, or undefined for a bug.
 * `request`, when the failure is its schema validation, lets the field paths tell array
 * indexes from keys made of digits.
 */
export function toApiError(err: unknown, request?: FastifyRequest): ApiError | undefined {
  if (err instanceof ApiError) return err;
  const fe = err as FastifyError;
  if (fe?.validation) return fromValidation(fe, request);
  const status = fe?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (fe.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new ApiError(415, 'The Content-Type of the request is not supported.');
    if (fe.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return ApiError.field('body', 'The JSON body is empty.');
    if (fe.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (err as Error).name === 'SyntaxError') {
      return ApiError.field('body', 'The body is not valid JSON.');
    }
    if (fe.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return bodyTooLarge();
    return new ApiError(status, fe.message);
  }
  return undefined;
}

/** A body over the server's limit (MAX_BODY_BYTES); also what `bt` answers for an argument over it. */
export function bodyTooLarge(): ApiError {
  return new ApiError(413, 'The request body is too large.');
}

export function sendProblem(reply: FastifyReply, request: FastifyRequest, error: ApiError): FastifyReply {
  return reply.code(error.status).type('application/problem+json').send(JSON.stringify(error.toProblem(request.id)));
}

/**
 * Failures that mean the database cannot be reached right now (refused, reset, timed out,
 * shutting down, out of connections), as opposed to a bug: the caller may retry.
 */
const DATABASE_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08006']);
const DATABASE_UNAVAILABLE_MESSAGES = /^(timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error)/;

/** query_canceled: a statement past statement_timeout (or cancelled by an operator). */
const STATEMENT_CANCELLED = '57014';

export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  return (typeof e?.code === 'string' && DATABASE_UNAVAILABLE_CODES.has(e.code)) || (typeof e?.message === 'string' && DATABASE_UNAVAILABLE_MESSAGES.test(e.message));
}

/**
 * The answer to a failure no ApiError describes, logged once: a database out of reach is a
 * 503 to retry, anything else a 500 that shows nothing of its cause.
 */
export function unexpectedError(err: Error & { code?: unknown }, log: FastifyBaseLogger, what = 'unhandled error'): ApiError {
  if (err?.code === STATEMENT_CANCELLED) {
    log.error({ err: { message: err.message, code: err.code } }, 'database statement cancelled');
    const slow = new ApiError(503, 'The database did not complete the request in time (DATABASE_STATEMENT_TIMEOUT_MS); retry shortly, and narrow the request if it searches or lists a lot.');
    slow.retryAfterSeconds = 1;
    return slow;
  }
  if (isDatabaseUnavailable(err)) {
    log.error({ err: { message: err.message, code: err.code } }, 'database unavailable');
    const unavailable = new ApiError(503, 'The database is not available right now; retry shortly.');
    unavailable.retryAfterSeconds = 1;
    return unavailable;
  }
  log.error({ err: { message: err.message, stack: err.stack, code: err.code } }, what);
  return new ApiError(500, 'An unexpected error occurred. Quote the request id when reporting it.');
}

export function errorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const apiError = toApiError(err, request) ?? unexpectedError(err, request.log);
  if (apiError.retryAfterSeconds !== undefined) reply.header('retry-after', String(apiError.retryAfterSeconds));
  return sendProblem(reply, request, apiError);
}
