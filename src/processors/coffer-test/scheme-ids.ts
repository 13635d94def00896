/**
 * Network ("scheme") transaction ids as the test processor makes them: in each network's format,
 * so code that stores, validates or forwards them (previous_scheme_transaction_id on a recurring
 * payment) meets the real shapes. Derived from a seed (a digest of the idempotency key), so a
 * replayed authorization gets the same id in any process.
 *
 * | Brand | Format | Example |
 * |---|---|---|
 * | visa, and every brand not below | Visa Transaction Identifier: 15 digits | 483920175563018 |
 * | mastercard, maestro | Banknet reference: `MCC` + 6 upper-case alphanumerics, then the settlement date MMDD (13) | MCC4K7Q2Z0614 |
 * | american-express | Amex transaction identifier: 15 digits | 000123456789012 |
 * | discover, diners-club | Network Reference ID (NRID): 15 upper-case alphanumerics (the field allows up to 29) | 7Q2ZK4M0X9P1B3C |
 */
const DIGITS = '0123456789';
const ALNUM = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

function pick(seed: Uint8Array, offset: number, length: number, alphabet: string): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[seed[(offset + i) % seed.length] % alphabet.length];
  return out;
}

export function schemeTransactionId(brand: string, seed: Uint8Array, at: Date): string {
  switch (brand) {
    case 'mastercard':
    case 'maestro': {
      const mmdd = String(at.getUTCMonth() + 1).padStart(2, '0') + String(at.getUTCDate()).padStart(2, '0');
      return `MCC${pick(seed, 0, 6, ALNUM)}${mmdd}`;
    }
    case 'american-express':
      return pick(seed, 0, 15, DIGITS);
    case 'discover':
    case 'diners-club':
      return pick(seed, 0, 15, ALNUM);
    default:
      // Visa's TID never starts with 0 in practice; the first digit is kept non-zero so it survives numeric handling.
      return String(1 + (seed[0] % 9)) + pick(seed, 1, 14, DIGITS);
  }
}
