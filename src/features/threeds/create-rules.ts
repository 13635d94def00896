import { FieldErrorList } from '../../http/errors.ts';
import {
  BROWSER_FIELDS, BROWSER_REQUIRED, BROWSER_REQUIRED_WITH_JAVASCRIPT, COLOR_DEPTHS, CreateSessionBody, MIN_SDK_TIMEOUT_MINUTES, MOBILE_FIELDS,
  MOBILE_REQUIRED, type CreateSessionRequest,
} from './create-schema.ts';
import { at, isIpAddress, isObject, schemaChecker } from './formats.ts';

/**
 * The rules of a create-session body beyond its schema: exactly one way of naming the card, and
 * the device fields EMV requires for the session's device (see create-schema.ts for the lists).
 * Schema failures and rule failures come together in one 400.
 */

const CARD_FIELDS = ['token_id', 'token_intent_id', 'pan'] as const;

const checkSchema = schemaChecker(CreateSessionBody);

/** Validates a create-session body and returns it normalized, or throws ApiError.validation naming every field at fault. */
export function validateCreateSessionRequest(body: unknown): CreateSessionRequest {
  const errors = new FieldErrorList();
  checkSchema(body, 'body', errors);
  if (isObject(body)) {
    checkCard(body, errors);
    checkDevice(body, errors);
  }
  errors.throwIfAny();
  return normalize(body as CreateSessionRequest);
}

function checkCard(body: Record<string, unknown>, errors: FieldErrorList): void {
  const given = CARD_FIELDS.filter((f) => body[f] !== undefined);
  if (given.length === 0) errors.add('body.token_id', 'is required, or token_intent_id (or the deprecated pan): one of them names the card');
  for (const extra of given.slice(1)) errors.add(`body.${extra}`, `must not be given with ${given[0]}: give exactly one of token_id, token_intent_id, pan`);
}

function checkDevice(body: Record<string, unknown>, errors: FieldErrorList): void {
  const { device, device_info: info } = body;
  if (info !== undefined && device === undefined) errors.add('body.device', 'is required with device_info: browser or mobile');
  if (device !== 'browser' && device !== 'mobile') return;
  if (info === undefined) {
    const needed = device === 'browser' ? BROWSER_REQUIRED : MOBILE_REQUIRED;
    errors.add('body.device_info', `is required when device is ${device} (with ${needed.join(', ')})`);
    return;
  }
  if (!isObject(info)) return;
  const required: string[] = device === 'browser' ? [...BROWSER_REQUIRED] : [...MOBILE_REQUIRED];
  if (device === 'browser' && info.browser_javascript_enabled === true) required.push(...BROWSER_REQUIRED_WITH_JAVASCRIPT);
  for (const field of required) {
    if (info[field] !== undefined) continue;
    const why = (BROWSER_REQUIRED_WITH_JAVASCRIPT as readonly string[]).includes(field) ? 'device is browser and browser_javascript_enabled is true' : `device is ${device}`;
    errors.add(`body.device_info.${field}`, `is required when ${why}`);
  }
  const foreign: readonly string[] = device === 'browser' ? MOBILE_FIELDS : BROWSER_FIELDS;
  for (const field of foreign) {
    if (info[field] !== undefined) errors.add(`body.device_info.${field}`, `is a ${device === 'browser' ? 'mobile (3DS SDK)' : 'browser'} field, and device is ${device}`);
  }
  // Meaning is checked only for the device's own fields: the others were refused above.
  if (device === 'browser') {
    const ip = at(info, 'browser_ip_address');
    if (typeof ip === 'string' && !isIpAddress(ip)) errors.add('body.device_info.browser_ip_address', 'must be an IPv4 or IPv6 address');
    const depth = at(info, 'browser_color_depth');
    if (depth === '0' || depth === '00') errors.add('body.device_info.browser_color_depth', 'must be at least 1 (bits per pixel)');
  } else {
    const timeout = at(info, 'sdk_max_timeout');
    if (typeof timeout === 'string' && /^[0-9]{1,2}$/.test(timeout) && Number(timeout) < MIN_SDK_TIMEOUT_MINUTES) {
      errors.add('body.device_info.sdk_max_timeout', `must be at least ${MIN_SDK_TIMEOUT_MINUTES} (minutes)`);
    }
  }
}

function normalize(body: CreateSessionRequest): CreateSessionRequest {
  const request = structuredClone(body);
  const info = request.device_info;
  if (info?.browser_color_depth !== undefined) {
    const bits = Number(info.browser_color_depth);
    info.browser_color_depth = String(COLOR_DEPTHS.findLast((d) => d <= bits));
  }
  if (info?.sdk_max_timeout !== undefined) info.sdk_max_timeout = info.sdk_max_timeout.padStart(2, '0');
  return request;
}
