/**
 * Card brand by BIN range, most specific first. Ranges follow the card networks'
 * published IIN tables; a number that matches none is `unknown`.
 */
type Range = { brand: string; from: number; to: number; digits: number; lengths: number[] };

const r = (brand: string, from: number, to: number, lengths: number[]): Range => ({
  brand,
  from,
  to,
  digits: String(from).length,
  lengths,
});

const RANGES: Range[] = [
  r('elo', 401178, 401179, [16]),
  r('elo', 438935, 438935, [16]),
  r('elo', 457631, 457632, [16]),
  r('elo', 504175, 504175, [16]),
  r('elo', 506699, 506778, [16]),
  r('elo', 509000, 509999, [16]),
  r('elo', 627780, 627780, [16]),
  r('elo', 636297, 636297, [16]),
  r('elo', 636368, 636368, [16]),
  r('elo', 650031, 650033, [16]),
  r('elo', 650035, 650051, [16]),
  r('elo', 650405, 650439, [16]),
  r('elo', 650485, 650538, [16]),
  r('elo', 650541, 650598, [16]),
  r('elo', 650700, 650718, [16]),
  r('elo', 650720, 650727, [16]),
  r('elo', 650901, 650978, [16]),
  r('elo', 651652, 651679, [16]),
  r('elo', 655000, 655019, [16]),
  r('elo', 655021, 655058, [16]),
  r('hipercard', 606282, 606282, [16, 19]),
  r('hipercard', 384100, 384100, [16, 19]),
  r('hipercard', 384140, 384140, [16, 19]),
  r('hipercard', 384160, 384160, [16, 19]),
  r('mir', 2200, 2204, [16, 17, 18, 19]),
  r('mastercard', 2221, 2720, [16]),
  r('mastercard', 51, 55, [16]),
  r('american-express', 34, 34, [15]),
  r('american-express', 37, 37, [15]),
  r('diners-club', 300, 305, [14, 16, 19]),
  r('diners-club', 36, 36, [14, 16, 19]),
  r('diners-club', 38, 39, [14, 16, 19]),
  r('discover', 6011, 6011, [16, 19]),
  r('discover', 644, 649, [16, 19]),
  r('discover', 65, 65, [16, 19]),
  r('discover', 622126, 622925, [16, 19]),
  r('jcb', 3528, 3589, [16, 17, 18, 19]),
  r('unionpay', 62, 62, [14, 15, 16, 17, 18, 19]),
  r('unionpay', 81, 81, [16, 17, 18, 19]),
  r('maestro', 493698, 493698, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 5018, 5018, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 5020, 5020, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 5038, 5038, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 5893, 5893, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 6304, 6304, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 6759, 6759, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 676770, 676770, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('maestro', 676774, 676774, [12, 13, 14, 15, 16, 17, 18, 19]),
  r('visa', 4, 4, [13, 16, 19]),
];

// Longer prefixes first, so 6011 wins over 62 and 4011 78 (elo) over 4 (visa).
RANGES.sort((a, b) => b.digits - a.digits);

const MAX_DIGITS = Math.max(...RANGES.map((range) => range.digits));

export function cardBrand(number: string): string {
  // Each prefix length's value once, not once per range: every card token created asks.
  const prefixes: number[] = [];
  for (let digits = 1; digits <= Math.min(MAX_DIGITS, number.length); digits++) prefixes[digits] = Number(number.slice(0, digits));
  for (const range of RANGES) {
    const prefix = prefixes[range.digits];
    if (prefix !== undefined && prefix >= range.from && prefix <= range.to && range.lengths.includes(number.length)) {
      return range.brand;
    }
  }
  return 'unknown';
}
