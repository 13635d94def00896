/**
 * What a proxy's body must satisfy beyond its schema, checked on create, update and patch:
 * a destination Coffer may call, transform code that compiles, a response transform with
 * exactly its type's fields, and an application of the same tenant.
 */
import type { Principal } from '../../access/principal.ts';
import { ApiError, FieldErrorList } from '../../http/errors.ts';
import type { OutboundClient } from '../../outbound/client.ts';
import { storableUrl } from '../../outbound/storable-url.ts';
import { configurationTooLarge, type Sandbox } from '../../sandbox/index.ts';
import type { ApplicationService } from '../applications/service.ts';
import { regexProblem } from './masks.ts';
import { MAX_URL_LENGTH, type ProxyInput } from './schema.ts';
import type { RequestTransform, ResponseTransform } from './store.ts';

export type ProxyValidator = ReturnType<typeof createProxyValidator>;

export function createProxyValidator(deps: { outbound: OutboundClient; sandbox: Sandbox; applications: ApplicationService }) {
  const { outbound, sandbox, applications } = deps;

  function checkUrl(url: string, errors: FieldErrorList): string {
    const checked = storableUrl(outbound, url, MAX_URL_LENGTH);
    if (checked.ok) return checked.href;
    errors.add('body.destination_url', checked.message);
    return url;
  }

  function checkCode(code: string, field: string, errors: FieldErrorList): void {
    const failure = sandbox.check(code);
    if (failure) errors.add(field, failure.detail);
  }

  /** Type defaults to code; each type takes exactly its own fields. */
  function responseTransform(t: NonNullable<ProxyInput['response_transform']>, errors: FieldErrorList): ResponseTransform | null {
    const at = 'body.response_transform';
    const type = t.type ?? 'code';
    const forbid = (field: 'code' | 'matcher' | 'replacement' | 'expression', why: string) => {
      if (t[field] !== undefined) errors.add(`${at}.${field}`, why);
    };
    if (type === 'code') {
      for (const f of ['matcher', 'replacement', 'expression'] as const) forbid(f, 'is only for transforms of type mask');
      if (t.code === undefined) errors.add(`${at}.code`, 'is required when type is code');
      else checkCode(t.code, `${at}.code`, errors);
      return t.code === undefined ? null : { type: 'code', code: t.code };
    }
    forbid('code', 'is only for transforms of type code');
    if (t.matcher === undefined) errors.add(`${at}.matcher`, 'is required when type is mask');
    if (t.replacement === undefined) errors.add(`${at}.replacement`, 'is required when type is mask');
    else if ([...t.replacement].length !== 1) errors.add(`${at}.replacement`, 'must be exactly one character');
    if (t.matcher === 'regex') {
      if (t.expression === undefined) errors.add(`${at}.expression`, 'is required when matcher is regex');
      else {
        const problem = regexProblem(t.expression);
        if (problem) errors.add(`${at}.expression`, problem);
      }
    } else if (t.matcher === 'chase_stratus_pan') forbid('expression', 'is not used by the chase_stratus_pan matcher');
    if (t.matcher === undefined || t.replacement === undefined) return null;
    return t.matcher === 'regex'
      ? { type: 'mask', matcher: 'regex', replacement: t.replacement, expression: t.expression ?? '' }
      : { type: 'mask', matcher: 'chase_stratus_pan', replacement: t.replacement };
  }

  /** Rules beyond the schema; returns what the row stores. */
  return async function validate(principal: Principal, input: ProxyInput) {
    const errors = new FieldErrorList();
    const destination_url = checkUrl(input.destination_url, errors);
    const tooLarge = configurationTooLarge(input.configuration);
    if (tooLarge) errors.add('body.configuration', tooLarge);
    const request_transform: RequestTransform | null = input.request_transform ? { code: input.request_transform.code } : null;
    if (request_transform) checkCode(request_transform.code, 'body.request_transform.code', errors);
    const response_transform = input.response_transform ? responseTransform(input.response_transform, errors) : null;
    let application_id: string | null = null;
    if (input.application) {
      application_id = input.application.id;
      const app = await applications.get(principal, application_id).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      });
      if (!app) errors.add('body.application.id', 'is not an application of this tenant');
      else if (app.type === 'management') errors.add('body.application.id', 'must be a public or private application');
    }
    errors.throwIfAny();
    return {
      name: input.name,
      destination_url,
      require_auth: input.require_auth,
      request_transform,
      response_transform,
      application_id,
      configuration: input.configuration ?? null,
    };
  };
}
