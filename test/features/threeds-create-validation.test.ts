import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, type FieldErrors } from '../../src/http/errors.ts';
import { validateCreateSessionRequest } from '../../src/features/threeds/create-rules.ts';
import { AuthenticateBody } from '../../src/features/threeds/authenticate-schema.ts';
import { BROWSER_REQUIRED, BROWSER_REQUIRED_WITH_JAVASCRIPT, CreateSessionBody, MOBILE_REQUIRED } from '../../src/features/threeds/create-schema.ts';

/**
 * validateCreateSessionRequest on its own: the card, the session type, and the device fields per
 * device; and both bodies' schemas describing every field, as the OpenAPI document shows them.
 */

type Body = Record<string, any>;
const UUID = '8b6f1c1e-7d4a-4b8a-9f3c-2a1b3c4d5e6f';

const browser = (): Body => ({
  browser_accept_header: 'text/html,application/xhtml+xml',
  browser_ip_address: '203.0.113.7',
  browser_javascript_enabled: true,
  browser_java_enabled: false,
  browser_color_depth: '24',
  browser_screen_height: '1080',
  browser_screen_width: '1920',
  browser_tz: '-60',
  browser_user_agent: 'Mozilla/5.0',
});

const mobile = (): Body => ({
  sdk_transaction_id: UUID,
  sdk_application_id: UUID,
  sdk_encryption_data: 'eyJhbGciOiJSU0EtT0FFUC0yNTYifQ.a2V5.aXY.Y2lwaGVy.dGFn',
  sdk_ephemeral_public_key: { kty: 'EC', crv: 'P-256', x: 'eA', y: 'eQ' },
  sdk_max_timeout: '05',
});

const session = (device: 'browser' | 'mobile' = 'browser'): Body => ({ token_id: 'card-token-1', type: 'customer', device, device_info: device === 'browser' ? browser() : mobile() });

function errorsOf(body: unknown): FieldErrors {
  try {
    validateCreateSessionRequest(body);
    return {};
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    return err.errors ?? {};
  }
}

function rejects(body: unknown, field: string, message?: RegExp): void {
  const errors = errorsOf(body);
  assert.ok(errors[field]?.length, `${field} should be named: ${JSON.stringify(errors)}`);
  if (message) assert.ok(errors[field].some((m) => message.test(m)), `${field}: ${JSON.stringify(errors[field])} should match ${message}`);
}

function accepts(body: unknown) {
  assert.deepEqual(errorsOf(body), {});
  return validateCreateSessionRequest(body);
}

const withInfo = (device: 'browser' | 'mobile', changes: Body): Body => {
  const body = session(device);
  for (const [key, value] of Object.entries(changes)) {
    if (value === undefined) delete body.device_info[key];
    else body.device_info[key] = value;
  }
  return body;
};

describe('3DS create-session validation: the card and the session type', () => {
  it('takes exactly one of token_id, token_intent_id and the deprecated pan', () => {
    accepts({ token_id: 'card-token-1', type: 'customer' });
    accepts({ token_intent_id: UUID, type: 'customer' });
    accepts({ pan: '4000020000000000', type: 'merchant' });
    rejects({ type: 'customer' }, 'body.token_id', /is required, or token_intent_id/);
    rejects({ token_id: 't', token_intent_id: UUID, type: 'customer' }, 'body.token_intent_id', /must not be given with token_id/);
    const three = errorsOf({ token_id: 't', token_intent_id: UUID, pan: '4000020000000000', type: 'customer' });
    assert.deepEqual(Object.keys(three).sort(), ['body.pan', 'body.token_intent_id']);
  });

  it('checks the card fields\' formats', () => {
    rejects({ token_id: 'a b', type: 'customer' }, 'body.token_id', /must be a token id/);
    rejects({ token_intent_id: 'intent-1', type: 'customer' }, 'body.token_intent_id', /uuid/);
    for (const pan of ['4111', '4000 0200 0000 0000', '40000200000000001234', 4000020000000000]) rejects({ pan, type: 'customer' }, 'body.pan');
  });

  it('requires type, customer or merchant', () => {
    rejects({ token_id: 't' }, 'body.type', /is required/);
    rejects({ token_id: 't', type: 'cardholder' }, 'body.type', /must be one of: customer, merchant/);
    accepts({ token_id: 't', type: 'merchant' });
  });

  it('refuses unknown properties, at the top and in device_info', () => {
    rejects({ ...session(), amount: 1 }, 'body.amount', /not a known property/);
    rejects(withInfo('browser', { browser_ip: '203.0.113.7' }), 'body.device_info.browser_ip', /not a known property/);
  });
});

describe('3DS create-session validation: device and device_info', () => {
  it('leaves both optional, but each needs the other', () => {
    accepts({ token_id: 't', type: 'customer' });
    rejects({ token_id: 't', type: 'customer', device_info: browser() }, 'body.device', /is required with device_info/);
    rejects({ token_id: 't', type: 'customer', device: 'browser' }, 'body.device_info', /is required when device is browser \(with browser_accept_header/);
    rejects({ token_id: 't', type: 'customer', device: 'mobile' }, 'body.device_info', /is required when device is mobile \(with sdk_transaction_id/);
    rejects({ token_id: 't', type: 'customer', device: 'app' }, 'body.device', /must be one of: browser, mobile/);
  });

  it('accepts a complete browser or mobile device, for customer and merchant sessions', () => {
    accepts(session('browser'));
    accepts(session('mobile'));
    accepts({ ...session('browser'), type: 'merchant' });
  });

  it('requires the browser fields EMV always requires', () => {
    for (const field of BROWSER_REQUIRED) rejects(withInfo('browser', { [field]: undefined }), `body.device_info.${field}`, /is required when device is browser$/);
  });

  it('requires the screen, time zone and Java fields only when JavaScript runs', () => {
    for (const field of BROWSER_REQUIRED_WITH_JAVASCRIPT) {
      rejects(withInfo('browser', { [field]: undefined }), `body.device_info.${field}`, /browser_javascript_enabled is true/);
    }
    const without = Object.fromEntries(BROWSER_REQUIRED_WITH_JAVASCRIPT.map((f) => [f, undefined]));
    accepts(withInfo('browser', { ...without, browser_javascript_enabled: false }));
  });

  it('requires the 3DS SDK fields for mobile', () => {
    for (const field of MOBILE_REQUIRED) rejects(withInfo('mobile', { [field]: undefined }), `body.device_info.${field}`, /is required when device is mobile/);
    accepts(withInfo('mobile', { sdk_reference_number: '3DS_LOA_SDK_ABCD_020200_00001' }));
  });

  it('refuses the other device\'s fields', () => {
    rejects(withInfo('browser', { sdk_max_timeout: '05' }), 'body.device_info.sdk_max_timeout', /is a mobile \(3DS SDK\) field, and device is browser/);
    rejects(withInfo('mobile', { browser_user_agent: 'Mozilla/5.0' }), 'body.device_info.browser_user_agent', /is a browser field, and device is mobile/);
  });

  /** field, device, values accepted, values refused. */
  const FORMATS: [string, 'browser' | 'mobile', unknown[], unknown[]][] = [
    ['browser_ip_address', 'browser', ['203.0.113.7', '2001:db8::1'], ['203.0.113', 'localhost', '', 2130706433]],
    ['browser_javascript_enabled', 'browser', [true], ['true']],
    ['browser_java_enabled', 'browser', [true, false], ['no']],
    ['browser_color_depth', 'browser', ['1', '24', '48', '30', '99'], ['0', 'deep', '100', 24]],
    ['browser_screen_height', 'browser', ['1', '999999'], ['1080px', '1234567', 1080]],
    ['browser_screen_width', 'browser', ['1920'], ['-1920']],
    ['browser_tz', 'browser', ['-60', '300', '0', '+330'], ['UTC', '+05:30', -60]],
    ['browser_accept_header', 'browser', ['*/*'], ['', 'a'.repeat(2049)]],
    ['browser_user_agent', 'browser', ['curl/8'], ['']],
    ['browser_language', 'browser', ['en-GB'], ['', 'x'.repeat(36)]],
    ['sdk_transaction_id', 'mobile', [UUID], ['txn-1']],
    ['sdk_application_id', 'mobile', [UUID], [42]],
    ['sdk_encryption_data', 'mobile', [UUID, 'h.k.iv.c.t', 'h..iv.c.t'], ['encrypted', 'a.b.c', '']],
    ['sdk_ephemeral_public_key', 'mobile', [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b' }], [{ crv: 'P-256' }, 'key', { kty: '' }]],
    ['sdk_max_timeout', 'mobile', ['5', '05', '99'], ['4', '00', '100', 5]],
    ['sdk_reference_number', 'mobile', ['REF'], ['', 'r'.repeat(33)]],
  ];
  for (const [field, device, good, bad] of FORMATS) {
    it(`device_info.${field}: accepts ${good.length} and refuses ${bad.length} values`, () => {
      for (const value of good) accepts(withInfo(device, { [field]: value }));
      for (const value of bad) {
        const errors = errorsOf(withInfo(device, { [field]: value }));
        assert.ok(Object.keys(errors).some((f) => f === `body.device_info.${field}` || f.startsWith(`body.device_info.${field}.`)), `${JSON.stringify(value)}: ${JSON.stringify(errors)}`);
      }
    });
  }

  it('takes a browser\'s colour depth as the nearest EMV value at or below it, and pads the SDK timeout', () => {
    const depth = (value: string) => accepts(withInfo('browser', { browser_color_depth: value })).device_info?.browser_color_depth;
    assert.deepEqual(['1', '3', '8', '15', '30', '32', '99'].map(depth), ['1', '1', '8', '15', '24', '32', '48']);
    assert.equal(accepts(withInfo('mobile', { sdk_max_timeout: '5' })).device_info?.sdk_max_timeout, '05');
  });

  it('reports every fault of a body in one error', () => {
    const body = withInfo('browser', { browser_ip_address: '999.1.1.1', browser_user_agent: undefined, sdk_transaction_id: UUID, browser_tz: 'CET' });
    body.type = 'both';
    body.pan = '4000020000000000';
    assert.deepEqual(Object.keys(errorsOf(body)).sort(), [
      'body.device_info.browser_ip_address', 'body.device_info.browser_tz', 'body.device_info.browser_user_agent',
      'body.device_info.sdk_transaction_id', 'body.pan', 'body.type',
    ]);
  });

  it('refuses a body that is not an object', () => {
    for (const body of [null, 'x', [session()]]) assert.deepEqual(Object.keys(errorsOf(body)), ['body']);
  });
});

describe('3DS request schemas', () => {
  /** Every property at every depth, with its schema. */
  function* properties(schema: Body, at: string): Generator<[string, Body]> {
    for (const [name, property] of Object.entries<Body>(schema.properties ?? {})) {
      yield [`${at}.${name}`, property];
      yield* properties(property, `${at}.${name}`);
    }
  }
  for (const [name, schema] of [['authenticate', AuthenticateBody], ['create', CreateSessionBody]] as const) {
    it(`the ${name} body describes every field it takes, at every depth`, () => {
      const fields = [...properties(schema, 'body')];
      assert.ok(fields.length > (name === 'authenticate' ? 80 : 20), String(fields.length));
      for (const [path, property] of fields) assert.ok(typeof property.description === 'string' && property.description.length > 3, `${path} has no description`);
    });
  }
});
