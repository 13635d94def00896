import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TSchema } from 'typebox';
import { addValidationErrors, ApiError, FieldErrorList, type AjvError } from './errors.ts';
import { refuseUnstorable } from './json-body.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const ajv = addFormats(new Ajv({ allErrors: true, useDefaults: true, removeAdditional: false, strict: false, coerceTypes: false }));

/**
 * Validates a value against a route-style schema where the route itself cannot (parts of
 * a document such as each token request inside a POST /tokenize body). Errors carry the
 * full field path, e.g. `body.card.data.number`. Strings holding U+0000 are refused too.
 */
export function compileValidator<T>(schema: TSchema): (value: unknown, at: string) => T {
  const check = ajv.compile(schema);
  return (value, at) => {
    if (check(value)) {
      // What reaches here may come from user code (reactor results, SDK calls), not a parsed body.
      refuseUnstorable(value, at);
      return value as T;
    }
    const errors = new FieldErrorList();
    addValidationErrors(errors, at, (check.errors ?? []) as AjvError[], value);
    throw ApiError.validation(errors.errors);
  };
}
