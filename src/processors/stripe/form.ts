/**
 * Stripe's request encoding: application/x-www-form-urlencoded with nested keys in brackets —
 * `payment_method_data[card][number]=…`, arrays by index `expand[0]=…` — as Stripe's own
 * libraries send it. Brackets stay literal (Stripe reads them either way; literal keeps logs and
 * tests readable); everything else is percent-encoded, so `+`, `&` and `=` in values survive.
 */
export type FormValue = string | number | boolean | null | undefined | FormValue[] | { [key: string]: FormValue };

export function encodeForm(params: { [key: string]: FormValue }): string {
  const pairs: string[] = [];
  walk(params, '', pairs);
  return pairs.join('&');
}

function walk(value: FormValue, prefix: string, pairs: string[]): void {
  // Absent means "not sent": Stripe reads an empty value as "unset this field".
  if (value === undefined || value === null) return;
  if (Array.isArray(value)) {
    value.forEach((item, index) => walk(item, `${prefix}[${index}]`, pairs));
    return;
  }
  if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) walk(item, prefix === '' ? encodeURIComponent(key) : `${prefix}[${encodeURIComponent(key)}]`, pairs);
    return;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError(`${prefix} is not a finite number`);
  pairs.push(`${prefix}=${encodeURIComponent(String(value))}`);
}
