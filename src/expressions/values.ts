/** How a value reads as text: strings as they are, null as '', anything else as JSON. */
export function stringForm(v: unknown): string {
  switch (typeof v) {
    case 'string':
      return v;
    case 'number':
    case 'boolean':
      return String(v);
    case 'undefined':
      return '';
    case 'bigint':
      return v.toString();
    default:
      return v === null ? '' : (JSON.stringify(v) ?? '');
  }
}

/** A property or index of a JSON value; own properties only, anything absent is null. */
export function child(v: unknown, key: string | number): unknown {
  if (v === null || typeof v !== 'object') return null;
  if (Array.isArray(v)) {
    const i = typeof key === 'number' ? key : arrayIndex(key);
    if (i === -1 && typeof key !== 'number') return null;
    const at = i < 0 ? v.length + i : i;
    return at >= 0 && at < v.length ? (v[at] ?? null) : null;
  }
  const k = typeof key === 'number' ? String(key) : key;
  return Object.hasOwn(v, k) ? ((v as Record<string, unknown>)[k] ?? null) : null;
}

/** '0', '17' → the number; anything else (including '-1', '01') → -1. */
function arrayIndex(s: string): number {
  const n = s.length;
  if (n === 0 || n > 15 || (n > 1 && s.charCodeAt(0) === 48)) return -1;
  let r = 0;
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return -1;
    r = r * 10 + c;
  }
  return r;
}

/** True when the string holds a surrogate, i.e. UTF-16 index arithmetic would split characters. */
export function hasSurrogates(s: string): boolean {
  for (let i = 0; i < s.length; i++) if ((s.charCodeAt(i) & 0xf800) === 0xd800) return true;
  return false;
}

/** The string's characters (code points); only allocates an array when it must. */
export function characters(s: string): string | string[] {
  return hasSurrogates(s) ? Array.from(s) : s;
}

export function joinSlice(chars: string | string[], start: number, end?: number): string {
  return typeof chars === 'string' ? chars.slice(start, end) : chars.slice(start, end).join('');
}

export function characterCount(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++, n++) {
    if ((s.charCodeAt(i) & 0xfc00) === 0xd800 && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return n;
}
