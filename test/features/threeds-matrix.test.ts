import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';
import { authenticate, cardToken, createSession, paymentBody, runChallenge, threedsKey } from './threeds-helpers.ts';

/**
 * Every row of the 3DS test-card matrix (docs/3ds.md, PAYMENTS-FACTS.md §1.1) through the API:
 * each Luhn-valid card and each 42000000000000NN alias as a card token, a session for it, its
 * authentication, and for the challenge rows the challenge completed on the test ACS's pages
 * (over HTTP here; in Chromium in threeds-browser.test.ts) and the final result read back.
 */

type Expect =
  | { ares: 'Y' | 'A' | 'N' | 'U' | 'R' | 'I' }
  | { ares: 'C'; final: 'Y' | 'A' | 'N' | 'U' | 'R'; type?: 'out-of-band'; mandated?: true; noMethod?: true }
  | { ares: 'error'; source: 'Directory Server' | '3DS Server'; status: number };

const MATRIX: [string, string[], string | undefined, Expect][] = [
  ['frictionless success', ['5204247750001471', '6011601160116011', '340000000004001'], '02', { ares: 'Y' }],
  ['challenge success', ['4000020000000000', '370000000000002', '3566002020360505', '3566006663297692'], '04', { ares: 'C', final: 'Y' }],
  ['challenge success, no Method', ['4005562231212123'], '14', { ares: 'C', final: 'Y', noMethod: true }],
  ['mandated challenge success', ['4761369980320253', '5200000000001104'], '15', { ares: 'C', final: 'Y', mandated: true }],
  ['out-of-band challenge success', ['4000000000000341'], '16', { ares: 'C', final: 'Y', type: 'out-of-band' }],
  ['attempted challenge', ['4005571701111111'], '08', { ares: 'C', final: 'A' }],
  ['attempted', ['4111111111111111', '5424180011113336'], '03', { ares: 'A' }],
  ['failed', ['4264281511112228', '5424180000000171'], '05', { ares: 'N' }],
  ['unavailable', ['5405001111111165'], '06', { ares: 'U' }],
  ['rejected', ['5405001111111116'], '07', { ares: 'R' }],
  ['failed challenge', ['4055011111111111', '5427660064241339'], '09', { ares: 'C', final: 'N' }],
  ['failed out-of-band challenge', ['6011361011110004'], '17', { ares: 'C', final: 'N', type: 'out-of-band' }],
  ['unavailable challenge', ['6011361000008888'], '10', { ares: 'C', final: 'U' }],
  ['rejected challenge', ['6011361000001115'], '11', { ares: 'C', final: 'R' }],
  ['Directory Server error', ['4264281500003339', '5424180011110001'], '12', { ares: 'error', source: 'Directory Server', status: 502 }],
  ['3DS Server error', ['4264281500001119'], '13', { ares: 'error', source: '3DS Server', status: 500 }],
  ['informational (Coffer\'s)', ['4000000000000457'], undefined, { ares: 'I' }],
];

const WORDS: Record<string, string> = {
  Y: 'successful', A: 'attempted', N: 'failed', U: 'unavailable', C: 'challenge', D: 'decoupled_challenge', R: 'rejected', I: 'informational',
};
const ECI: Record<string, Record<string, string>> = { mastercard: { Y: '02', A: '01' }, other: { Y: '05', A: '06' } };

function assertFinal(r: any, letter: string, brand: string, label: string): void {
  assert.equal(r.authentication_status, WORDS[letter], label);
  assert.equal(r.authentication_status_code, letter, label);
  if (letter === 'Y' || letter === 'A') {
    assert.equal(r.eci, (ECI[brand] ?? ECI.other)[letter], `${label}: eci`);
    assert.match(r.authentication_value, /^[A-Za-z0-9+/]{27}=$/, `${label}: authentication_value`);
    assert.equal(Buffer.from(r.authentication_value, 'base64').length, 20, label);
  } else {
    assert.equal(r.eci, undefined, `${label}: no eci`);
    assert.equal(r.authentication_value, undefined, `${label}: no authentication_value`);
  }
  if ('NUR'.includes(letter)) assert.match(r.authentication_status_reason ?? '', /^[a-z-]+$/, `${label}: a reason`);
}

describe('the 3DS test-card matrix through the API', () => {
  let server: TestServer;
  let key: string;
  const brands = new Map<string, string>();

  before(async () => {
    server = await startTestServer();
    key = await threedsKey(server);
  });
  after(() => server?.stop());

  async function check(pan: string, expect: Expect): Promise<void> {
    const token = await cardToken(server, key, pan);
    const created = await createSession(server, key, { token_id: token });
    const brand = created.card_brand;
    brands.set(pan, brand);
    if (expect.ares === 'C' && expect.noMethod) assert.equal(created.method_url, undefined, pan);
    else assert.equal(created.method_url, `${server.url}/3ds/acs/method`, pan);

    const res = await authenticate(server, key, created.id);
    if (expect.ares === 'error') {
      assert.equal(res.status, 424, res.text);
      assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.equal(res.body.status, 424);
      assert.equal(res.body.title, '3DS Service Error');
      assert.equal(res.body.error_source, expect.source, pan);
      assert.equal(res.body.service_status, expect.status, pan);
      assert.equal(res.body.session_id, created.id, pan);
      assert.ok(res.body.message && res.body.detail, pan);
      // Nothing was stored: the session is as it was.
      const s = (await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body;
      assert.equal(s.authentication, undefined, pan);
      return;
    }
    assert.equal(res.status, 200, `${pan}: ${res.text}`);
    const ares = res.body;
    assert.equal(ares.directory_status_code, expect.ares, pan);
    if (expect.ares !== 'C') {
      assertFinal(ares, expect.ares, brand, pan);
      assert.equal(ares.acs_challenge_url, undefined, pan);
      return;
    }
    assertFinal(ares, 'C', brand, pan);
    assert.equal(ares.acs_challenge_url, `${server.url}/3ds/acs/challenge`, pan);
    assert.equal(ares.acs_challenge_mandated, expect.mandated ? 'Y' : 'N', pan);
    assert.equal(ares.authentication_challenge_type, expect.type ?? 'static', pan);
    assert.equal(ares.challenge_attempts, '0', pan);

    const { last, notification } = await runChallenge(ares, created.id, [expect.type === 'out-of-band' ? 'approve' : 'right']);
    assert.ok(notification, `${pan}: the challenge completed and posted its CRes\n${last}`);
    assert.match(notification, new RegExp(`data-challenge-id="${created.id}" data-completed="true" data-status="${WORDS[expect.final]}"`), pan);
    assert.equal(/Cancel</.test(last), false);

    const result = await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key });
    assert.equal(result.status, 200, result.text);
    const r = result.body;
    assertFinal(r, expect.final, brand, `${pan} final`);
    assert.equal(r.acs_transaction_id, ares.acs_transaction_id, pan);
    assert.equal(r.ds_transaction_id, ares.ds_transaction_id, pan);
    assert.equal(r.directory_status_code, 'C', pan);
    assert.equal(r.acs_challenge_url, ares.acs_challenge_url, pan);
    assert.equal(r.acs_challenge_mandated, ares.acs_challenge_mandated, pan);
    assert.equal(r.authentication_challenge_type, ares.authentication_challenge_type, pan);
    assert.equal(r.challenge_attempts, '1', pan);
    assert.deepEqual((await call(server, 'GET', `/3ds/sessions/${created.id}/challenge-result`, { key })).body, r, `${pan}: read twice, the same`);
    assert.deepEqual((await call(server, 'GET', `/3ds/sessions/${created.id}`, { key })).body.authentication, r, pan);
  }

  for (const [name, cards, alias, expect] of MATRIX) {
    describe(name, () => {
      for (const pan of cards) it(pan, () => check(pan, expect));
      if (alias) {
        it(`alias 42000000000000${alias}`, async () => {
          await check(`42000000000000${alias}`, expect);
          assert.equal(brands.get(`42000000000000${alias}`), 'visa', 'every alias is reported as Visa');
        });
      }
    });
  }

  it('accepts the non-Luhn test numbers as card data, and no other number failing Luhn', async () => {
    for (const pan of ['6011601160116011', '4200000000000002', '4200000000000017']) await cardToken(server, key, pan);
    for (const pan of ['6011601160116012', '4200000000000001', '4200000000000019']) {
      const res = await call(server, 'POST', '/tokens', { key, body: { type: 'card', data: { number: pan } } });
      assert.equal(res.status, 400, pan);
    }
  });

  it('any other card authenticates frictionlessly, or with a challenge when the requestor asks for one', async () => {
    const plain = await createSession(server, key, { token_id: await cardToken(server, key, '4242424242424242') });
    const res = await authenticate(server, key, plain.id);
    assertFinal(res.body, 'Y', 'visa', '4242');
    const asked = await createSession(server, key, { token_id: await cardToken(server, key, '4242424242424242') });
    const challenged = await authenticate(server, key, asked.id, paymentBody({ challenge_preference: 'challenge-mandated' }));
    assert.equal(challenged.body.authentication_status, 'challenge');
    assert.equal(challenged.body.acs_challenge_mandated, 'Y');
    assert.equal(challenged.body.challenge_preference_code, '04');
  });
});
