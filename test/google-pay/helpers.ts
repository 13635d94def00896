import assert from 'node:assert/strict';
import { GooglePayError, type GooglePayErrorCode } from '../../src/google-pay/errors.ts';

/** `run` throws a GooglePayError with `code` (and `field`, when given) whose message holds none of `secrets`. */
export function throwsGooglePay(run: () => unknown, code: GooglePayErrorCode, field?: string, secrets: string[] = []): GooglePayError {
  let caught: unknown;
  try {
    run();
  } catch (err) {
    caught = err;
  }
  return checked(caught, code, field, secrets);
}

export async function rejectsGooglePay(run: () => Promise<unknown>, code: GooglePayErrorCode, field?: string, secrets: string[] = []): Promise<GooglePayError> {
  let caught: unknown;
  try {
    await run();
  } catch (err) {
    caught = err;
  }
  return checked(caught, code, field, secrets);
}

function checked(caught: unknown, code: GooglePayErrorCode, field: string | undefined, secrets: string[]): GooglePayError {
  assert.ok(caught instanceof GooglePayError, `expected a GooglePayError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  if (field !== undefined) assert.equal(caught.field, field, caught.message);
  for (const secret of secrets) assert.ok(!caught.message.includes(secret), `the message names a secret: ${caught.message}`);
  return caught;
}
