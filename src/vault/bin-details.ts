/**
 * What a card's BIN tells beyond its brand: how it is funded, and whether its issuer is in a
 * region where strong customer authentication (3DS) is required for online payments (the EEA
 * and the UK, under PSD2). Issuers publish this only through BIN databases, which Coffer does
 * not ship: the built-in table knows the well-known test cards (docs/payment-methods.md), and
 * any other card is `unknown` on both counts rather than guessed from its brand.
 */
export type Funding = 'credit' | 'debit' | 'prepaid' | 'unknown';
export type CardAuthentication = 'sca_required' | 'sca_optional' | 'unknown';
export type BinDetails = { funding: Funding; authentication: CardAuthentication };

/** ISO 3166 codes of the countries where PSD2's strong customer authentication applies. */
const SCA_COUNTRIES = new Set(
  'AT BE BG HR CY CZ DK EE FI FR DE GR HU IS IE IT LV LI LT LU MT NL NO PL PT RO SK SI ES SE GB'.split(' '),
);

/** Prefix (6 or 8 digits) → funding and issuer country. */
const TABLE: Record<string, [Funding, string]> = {
  '411111': ['credit', 'US'],
  '424242': ['credit', 'US'],
  '400005': ['debit', 'US'],
  '555555': ['credit', 'US'],
  '520082': ['debit', 'US'],
  '510510': ['prepaid', 'US'],
  '378282': ['credit', 'US'],
  '371449': ['credit', 'US'],
  '601111': ['credit', 'US'],
  '40000025': ['credit', 'FR'],
  '40000027': ['credit', 'DE'],
  '40000082': ['credit', 'GB'],
};

export function binDetails(number: string): BinDetails {
  const entry = TABLE[number.slice(0, 8)] ?? TABLE[number.slice(0, 6)];
  if (!entry) return { funding: 'unknown', authentication: 'unknown' };
  const [funding, country] = entry;
  return { funding, authentication: SCA_COUNTRIES.has(country) ? 'sca_required' : 'sca_optional' };
}
