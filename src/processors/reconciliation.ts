/**
 * reconciliation_id: a transaction id's 128 bits in base62 (0-9A-Za-z), the short reference
 * Coffer sends to processors and anti-fraud services in place of the UUID (PAYMENTS-FACTS.md §6:
 * Gr4vy's `7EgeeeTX0DS45RBDNt4AEY` is edc82971-de80-40a2-90a5-bce5cb5028de this way).
 * Always 22 characters, left-padded with 0: 62^21 < 2^128 ≤ 62^22, and a fixed length keeps
 * the ids sortable and easy to validate.
 */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const LENGTH = 22;
const MAX = (1n << 128n) - 1n;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const BASE62 = /^[0-9A-Za-z]{1,22}$/;

export function reconciliationId(uuid: string): string {
  if (typeof uuid !== 'string' || !UUID.test(uuid)) throw new TypeError('a reconciliation id is made from a UUID');
  let value = BigInt(`0x${uuid.replaceAll('-', '')}`);
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out.padStart(LENGTH, '0');
}

/** The UUID (lower case, hyphenated) a reconciliation id stands for; undefined when it is not one. Unpadded ids are accepted. */
export function uuidFromReconciliationId(id: string): string | undefined {
  if (typeof id !== 'string' || !BASE62.test(id)) return undefined;
  let value = 0n;
  for (const char of id) value = value * 62n + BigInt(ALPHABET.indexOf(char));
  if (value > MAX) return undefined;
  const hex = value.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
