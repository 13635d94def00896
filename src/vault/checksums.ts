/** Luhn (mod 10), the check digit of card numbers. */
export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/**
 * Card numbers that fail the Luhn check and are accepted all the same: the 3DS test cards the
 * reference API documents as such (docs/3ds.md, "Test cards"): 6011601160116011, listed among
 * its Luhn-valid cards, and the Visa aliases 42000000000000NN. Failing Luhn, none of them can be
 * a real card's number, so accepting them costs the check nothing: it is there to catch typing
 * mistakes, and these exact numbers are typed on purpose. src/threeds/test-cards.ts holds the
 * same numbers; test/threeds/test-numbers.test.ts keeps the two lists equal.
 */
export const NON_LUHN_TEST_CARDS: ReadonlySet<string> = new Set([
  '6011601160116011',
  ...['02', '03', '04', '05', '06', '07', '08', '09', '10', '11', '12', '13', '14', '15', '16', '17'].map((nn) => `42000000000000${nn}`),
]);

/** A card number's check: Luhn, or one of the documented NON_LUHN_TEST_CARDS. */
export function cardNumberChecks(digits: string): boolean {
  return luhnValid(digits) || NON_LUHN_TEST_CARDS.has(digits);
}

/** ABA routing number checksum: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) ≡ 0 (mod 10). */
export function abaValid(routing: string): boolean {
  if (!/^\d{9}$/.test(routing)) return false;
  const d = [...routing].map(Number);
  const sum = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5] + d[8]);
  return sum % 10 === 0;
}
