import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import {
  creqMatches, decodeCReq, decodeMethodData, encodeCReq, encodeCRes, encodeMethodCompletion,
} from '../../src/threeds/index.ts';
import { challengeOf, outcomeOf, run, simulator } from './helpers.ts';

/** The base64url JSON messages that pass through the browser: threeDSMethodData, creq, cres. */

const b64url = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');

describe('CReq', () => {
  it('as the web SDK builds it: read back, and matched to its challenge only', async () => {
    const { outcome, session } = await run(simulator(), '4000020000000000');
    const state = challengeOf(outcomeOf(outcome, 'C'), 'C');
    const creq = encodeCReq(session.id, state);
    assert.doesNotMatch(creq, /[=+/]/);
    const read = decodeCReq(creq);
    assert.deepEqual(read, {
      threeDSServerTransID: session.id, acsTransID: state.ares.acs_transaction_id, messageVersion: '2.2.0', challengeWindowSize: '03',
    });
    assert.ok(creqMatches(read!, state));
    assert.ok(!creqMatches({ ...read!, acsTransID: randomUUID() }, state));
    assert.ok(!creqMatches({ ...read!, threeDSServerTransID: randomUUID() }, state));
  });

  it('challengeWindowSize is optional (03) and otherwise 01 to 05; padding is tolerated', () => {
    const base = { messageType: 'CReq', messageVersion: '2.2.0', threeDSServerTransID: randomUUID(), acsTransID: randomUUID() };
    assert.equal(decodeCReq(b64url(base))?.challengeWindowSize, '03');
    assert.equal(decodeCReq(b64url({ ...base, challengeWindowSize: '05' }))?.challengeWindowSize, '05');
    assert.equal(decodeCReq(b64url({ ...base, challengeWindowSize: '06' })), undefined);
    assert.ok(decodeCReq(Buffer.from(JSON.stringify(base)).toString('base64url') + '=='));
  });

  it('anything else is not a CReq', () => {
    const base = { messageType: 'CReq', messageVersion: '2.2.0', threeDSServerTransID: randomUUID(), acsTransID: randomUUID() };
    for (const bad of [
      '', 'not base64!', b64url([base]), b64url('CReq'), Buffer.from('{').toString('base64url'),
      b64url({ ...base, messageType: 'CRes' }), b64url({ ...base, acsTransID: 'x' }), b64url({ ...base, threeDSServerTransID: 7 }),
      b64url({ ...base, messageVersion: '1.0.2' }), 'A'.repeat(9000),
    ]) {
      assert.equal(decodeCReq(bad), undefined, bad.slice(0, 40));
    }
  });
});

describe('CRes', () => {
  it('only once the challenge has settled, carrying the final transStatus', async () => {
    const provider = simulator();
    const { outcome, session } = await run(provider, '4005571701111111');
    const state = challengeOf(outcomeOf(outcome, 'C'), 'C');
    assert.equal(encodeCRes(state), undefined);
    const step = await provider.challenge(state, { kind: 'code', code: state.code! });
    const cres = encodeCRes(step.challenge)!;
    assert.doesNotMatch(cres, /[=+/]/);
    assert.deepEqual(JSON.parse(Buffer.from(cres, 'base64url').toString()), {
      messageType: 'CRes', messageVersion: '2.2.0', threeDSServerTransID: session.id,
      acsTransID: state.ares.acs_transaction_id, transStatus: 'A', challengeCompletionInd: 'Y',
    });
  });
});

describe('3DS Method data', () => {
  it('reads what the SDK posts, and writes the completion the ACS posts back', () => {
    const id = randomUUID();
    const url = `https://coffer.test/3ds/sessions/${id}/method-notification`;
    assert.deepEqual(decodeMethodData(b64url({ threeDSServerTransID: id, threeDSMethodNotificationURL: url })), {
      threeDSServerTransID: id, threeDSMethodNotificationURL: url,
    });
    assert.deepEqual(JSON.parse(Buffer.from(encodeMethodCompletion(id), 'base64url').toString()), { threeDSServerTransID: id });
  });

  it('refuses what is not method data', () => {
    const id = randomUUID();
    for (const bad of [
      b64url({ threeDSServerTransID: id }), b64url({ threeDSServerTransID: 'x', threeDSMethodNotificationURL: 'https://a.test/' }),
      b64url({ threeDSServerTransID: id, threeDSMethodNotificationURL: 'not a url' }), 'with spaces',
    ]) {
      assert.equal(decodeMethodData(bad), undefined, bad);
    }
  });
});
