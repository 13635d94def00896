/**
 * The simulator's test cards: PAYMENTS-FACTS.md §1.1 (the reference API's documented 3DS test
 * cards, each behaving as that table's "Simulator" column says), two cards of Coffer's own for
 * the statuses the reference documents no card for (decoupled D, informational I), and the rule
 * for every other card. docs/3ds.md lists them for users.
 */
import type { ErrorSource, FinalStatusCode, StatusReason } from './vocabulary.ts';

export type Scenario =
  | { flow: 'frictionless'; status: FinalStatusCode | 'I'; reason?: StatusReason; method: boolean }
  | {
      flow: 'challenge';
      type: 'static' | 'out-of-band';
      mandated: boolean;
      /** The issuer's verdict once the cardholder completes the challenge. */
      outcome: FinalStatusCode;
      reason?: StatusReason;
      method: boolean;
    }
  | { flow: 'decoupled'; outcome: FinalStatusCode; reason?: StatusReason; method: boolean }
  | { flow: 'error'; source: ErrorSource; method: boolean };

export interface TestCard {
  /** A kebab-case name for docs and tests. */
  name: string;
  scenario: Scenario;
  /** Card numbers as the reference API lists them (one, 6011601160116011, fails Luhn there too). */
  cards: string[];
  /** NN of the Visa alias 42000000000000NN; Coffer's own cards have none. */
  alias?: string;
}

const frictionless = (status: FinalStatusCode | 'I', reason?: StatusReason): Scenario => ({ flow: 'frictionless', status, reason, method: true });
const challenge = (outcome: FinalStatusCode, reason?: StatusReason, more: { type?: 'static' | 'out-of-band'; mandated?: boolean; method?: boolean } = {}): Scenario => ({
  flow: 'challenge', type: more.type ?? 'static', mandated: more.mandated ?? false, outcome, reason, method: more.method ?? true,
});

export const TEST_CARDS: readonly TestCard[] = [
  { name: 'frictionless-success', scenario: frictionless('Y'), cards: ['5204247750001471', '6011601160116011', '340000000004001'], alias: '02' },
  { name: 'challenge-success', scenario: challenge('Y'), cards: ['4000020000000000', '370000000000002', '3566002020360505', '3566006663297692'], alias: '04' },
  { name: 'challenge-success-no-method', scenario: challenge('Y', undefined, { method: false }), cards: ['4005562231212123'], alias: '14' },
  { name: 'mandated-challenge-success', scenario: challenge('Y', undefined, { mandated: true }), cards: ['4761369980320253', '5200000000001104'], alias: '15' },
  { name: 'out-of-band-challenge-success', scenario: challenge('Y', undefined, { type: 'out-of-band' }), cards: ['4000000000000341'], alias: '16' },
  { name: 'attempted-challenge', scenario: challenge('A'), cards: ['4005571701111111'], alias: '08' },
  { name: 'attempted', scenario: frictionless('A'), cards: ['4111111111111111', '5424180011113336'], alias: '03' },
  { name: 'failed', scenario: frictionless('N', 'card-authentication-failed'), cards: ['4264281511112228', '5424180000000171'], alias: '05' },
  { name: 'unavailable', scenario: frictionless('U', 'acs-technical-issue'), cards: ['5405001111111165'], alias: '06' },
  { name: 'rejected', scenario: frictionless('R', 'suspected-fraud'), cards: ['5405001111111116'], alias: '07' },
  { name: 'failed-challenge', scenario: challenge('N', 'card-authentication-failed'), cards: ['4055011111111111', '5427660064241339'], alias: '09' },
  {
    name: 'failed-out-of-band-challenge',
    scenario: challenge('N', 'card-authentication-failed', { type: 'out-of-band' }),
    cards: ['6011361011110004'],
    alias: '17',
  },
  { name: 'unavailable-challenge', scenario: challenge('U', 'acs-technical-issue'), cards: ['6011361000008888'], alias: '10' },
  { name: 'rejected-challenge', scenario: challenge('R', 'transaction-not-permitted'), cards: ['6011361000001115'], alias: '11' },
  { name: 'directory-server-error', scenario: { flow: 'error', source: 'Directory Server', method: true }, cards: ['4264281500003339', '5424180011110001'], alias: '12' },
  { name: 'threeds-server-error', scenario: { flow: 'error', source: '3DS Server', method: true }, cards: ['4264281500001119'], alias: '13' },
  // Coffer's own: the reference documents no card for D or I. Luhn-valid, outside every row above.
  { name: 'decoupled-challenge', scenario: { flow: 'decoupled', outcome: 'Y', method: true }, cards: ['4000000000000440'] },
  { name: 'informational', scenario: frictionless('I'), cards: ['4000000000000457'] },
];

/** Every other card: frictionless success (challenged instead when the requestor asks for a challenge). */
export const DEFAULT_SCENARIO: Scenario = frictionless('Y');

/** The reference API's non-Luhn aliases: Visa 42000000000000NN. */
export const ALIAS_PREFIX = '42000000000000';

const BY_NUMBER = new Map<string, TestCard>();
for (const card of TEST_CARDS) {
  for (const number of card.cards) BY_NUMBER.set(number, card);
  if (card.alias) BY_NUMBER.set(ALIAS_PREFIX + card.alias, card);
}

/** The test card a PAN is, if any. */
export function testCardFor(pan: string): TestCard | undefined {
  return BY_NUMBER.get(pan);
}

/** True for a 42000000000000NN alias of the table (whose brand is reported as visa). */
export function isAlias(pan: string): boolean {
  return pan.length === 16 && pan.startsWith(ALIAS_PREFIX) && BY_NUMBER.has(pan);
}
