/**
 * The fake Stripe's reading of a form body: bracketed keys into nested objects, and a check of
 * every key against the parameters each endpoint documents, so a mis-encoded or unknown field
 * fails the way Stripe fails it (400 parameter_unknown / parameter_invalid), not silently.
 */
export type Params = { [key: string]: string | Params | Params[] | string[] };

export class FormError extends Error {
  readonly code: string;
  readonly param: string;

  constructor(code: string, param: string, message: string) {
    super(message);
    this.code = code;
    this.param = param;
  }
}

const KEY = /^([A-Za-z0-9_]+)((?:\[[A-Za-z0-9_]*\])*)$/;

export function decodeForm(body: string): Params {
  const out: Params = {};
  if (body === '') return out;
  for (const pair of body.split('&')) {
    const eq = pair.indexOf('=');
    if (eq < 0) throw new FormError('parameter_invalid_empty', pair, `Invalid pair: ${pair}`);
    const decode = (s: string) => decodeURIComponent(s.replaceAll('+', ' '));
    const rawKey = decode(pair.slice(0, eq));
    const match = KEY.exec(rawKey);
    if (!match || rawKey.includes('__proto__')) throw new FormError('parameter_invalid', rawKey, `Malformed parameter name: ${rawKey}`);
    const path = [match[1], ...[...match[2].matchAll(/\[([A-Za-z0-9_]*)\]/g)].map((m) => m[1])];
    set(out, path, decode(pair.slice(eq + 1)), rawKey);
  }
  return out;
}

function set(target: Params, path: string[], value: string, rawKey: string): void {
  let node: Params = target;
  for (let i = 0; i < path.length - 1; i++) {
    const part = path[i];
    const nextIsIndex = path[i + 1] === '' || /^\d+$/.test(path[i + 1]);
    node[part] ??= (nextIsIndex ? [] : {}) as Params;
    if (typeof node[part] === 'string') throw new FormError('parameter_invalid', rawKey, `${rawKey} nests under a plain value`);
    node = node[part] as Params;
  }
  const last = path[path.length - 1];
  if (Array.isArray(node) && last === '') (node as unknown as string[]).push(value);
  else if (Object.hasOwn(node, last)) throw new FormError('parameter_invalid', rawKey, `${rawKey} is given twice`);
  else node[last] = value;
}

/** A schema: '' for a value, an object for nested parameters, [schema] for an array, '*' for any string map (metadata). */
export type Schema = '' | '*' | { [key: string]: Schema } | [Schema];

export function checkParams(params: Params, schema: { [key: string]: Schema }, prefix = ''): void {
  for (const [key, value] of Object.entries(params)) {
    const name = prefix ? `${prefix}[${key}]` : key;
    const rule = schema[key];
    if (rule === undefined) throw new FormError('parameter_unknown', name, `Received unknown parameter: ${name}`);
    if (rule === '*') {
      if (typeof value !== 'object' || Array.isArray(value)) throw new FormError('parameter_invalid', name, `${name} must be a hash`);
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string' || v.length > 500) throw new FormError('parameter_invalid', `${name}[${k}]`, `Invalid value for ${name}[${k}]: at most 500 characters`);
      }
    } else if (rule === '') {
      if (typeof value !== 'string') throw new FormError('parameter_invalid', name, `Invalid value for ${name}: a string is expected`);
    } else if (Array.isArray(rule)) {
      if (!Array.isArray(value)) throw new FormError('parameter_invalid', name, `Invalid array: ${name}`);
      value.forEach((item, i) => {
        if (rule[0] === '') {
          if (typeof item !== 'string') throw new FormError('parameter_invalid', `${name}[${i}]`, `Invalid value for ${name}[${i}]`);
        } else checkParams(item as Params, rule[0] as { [key: string]: Schema }, `${name}[${i}]`);
      });
    } else {
      if (typeof value !== 'object' || Array.isArray(value)) throw new FormError('parameter_invalid', name, `Invalid object: ${name}`);
      checkParams(value as Params, rule, name);
    }
  }
}

/** The parameters of the endpoints the connector uses (as far as it uses them), from Stripe's API reference. */
export const SCHEMAS: Record<string, { [key: string]: Schema }> = {
  'POST /v1/payment_intents': {
    amount: '', currency: '', confirm: '', capture_method: '', payment_method_types: [''], off_session: '', return_url: '', metadata: '*', expand: [''],
    payment_method_data: {
      type: '',
      card: { number: '', exp_month: '', exp_year: '', cvc: '' },
      billing_details: { address: { line1: '', postal_code: '', country: '' } },
    },
    payment_method_options: {
      card: {
        three_d_secure: { version: '', electronic_commerce_indicator: '', cryptogram: '', transaction_id: '', ares_trans_status: '' },
        mit_exemption: { network_transaction_id: '' },
      },
    },
  },
  'POST /v1/payment_intents/:id/capture': { amount_to_capture: '', expand: [''], metadata: '*' },
  'POST /v1/payment_intents/:id/cancel': { cancellation_reason: '', expand: [''] },
  'POST /v1/refunds': { payment_intent: '', amount: '', reason: '', metadata: '*', expand: [''] },
  'GET /v1/payment_intents/:id': { expand: [''] },
  'GET /v1/refunds/:id': { expand: [''] },
};
