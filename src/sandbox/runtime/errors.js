// The `@coffer/errors` module. An error's HTTP status is recorded here, in a map user code
// cannot reach, when the error is constructed: assigning `err.status = 500` later changes
// nothing, and a plain object with a `status` property is just a plain error (422). The classes
// and their prototypes are frozen at install: a context serves many calls of the same code, and
// what one call does to them must not change the errors (`bt`'s included) of the next.

const brands = privateMap();
const classStatus = privateMap();

class ApiError extends $Error {
  constructor(message, data) {
    super(message === undefined ? undefined : describe(message));
    let status = 422;
    for (let c = new.target; c; c = getPrototypeOf(c)) {
      if (classStatus.has(c)) {
        status = classStatus.get(c);
        break;
      }
    }
    brands.set(this, { __proto__: null, status, kind: 'user_error' });
    defineProperty(this, 'name', { __proto__: null, value: new.target.name || 'ApiError', writable: true, configurable: true });
    setOwn(this, 'status', status);
    if (data !== undefined) {
      setOwn(this, 'data', data);
      setOwn(this, 'details', data);
    }
  }
}

function errorClass(name, status, defaultMessage) {
  const C = {
    [name]: class extends ApiError {
      constructor(message, data) {
        super(message === undefined || message === null || message === '' ? defaultMessage : message, data);
      }
    },
  }[name];
  classStatus.set(C, status);
  return C;
}

const BadRequestError = errorClass('BadRequestError', 400, 'Bad Request');
const AuthenticationError = errorClass('AuthenticationError', 401, 'Authentication Failed');
const AuthorizationError = errorClass('AuthorizationError', 403, 'Forbidden');
const NotFoundError = errorClass('NotFoundError', 404, 'Not Found');
const UnprocessableEntityError = errorClass('UnprocessableEntityError', 422, 'Unprocessable Entity');
const RateLimitError = errorClass('RateLimitError', 429, 'Too Many Requests');
// "The code failed": 422, never 5xx. A 5xx from Coffer means Coffer itself is broken.
const ReactorRuntimeError = errorClass('ReactorRuntimeError', 422, 'Reactor Runtime Error');

const BY_STATUS = create(null);
for (const C of [BadRequestError, AuthenticationError, AuthorizationError, NotFoundError, UnprocessableEntityError, RateLimitError]) {
  BY_STATUS[classStatus.get(C)] = C;
}

/** An error the host reported ({status, message, data}) as user code sees it: it keeps its status. */
function apiErrorFromHost(e) {
  const status = $isInteger(e.status) && e.status >= 400 && e.status <= 599 ? e.status : 500;
  const C = BY_STATUS[status] || ApiError;
  const err = new C(typeof e.message === 'string' ? e.message : 'The request failed.', e.data);
  brands.set(err, { __proto__: null, status, kind: status >= 500 ? 'runtime' : 'user_error' });
  setOwn(err, 'status', status);
  return err;
}

/** Something user code produced is over the size limit (a result, a fetch body, an SDK argument). */
function tooLarge(message) {
  const err = new UnprocessableEntityError(message);
  brands.set(err, { __proto__: null, status: 422, kind: 'too_large' });
  return err;
}

const errorsModule = freeze({
  ApiError,
  BadRequestError,
  AuthenticationError,
  AuthorizationError,
  NotFoundError,
  UnprocessableEntityError,
  RateLimitError,
  ReactorRuntimeError,
});
for (const C of [ApiError, BadRequestError, AuthenticationError, AuthorizationError, NotFoundError, UnprocessableEntityError, RateLimitError, ReactorRuntimeError]) {
  freeze(C.prototype);
  freeze(C);
}
