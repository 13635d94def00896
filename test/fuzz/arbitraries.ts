import fc from 'fast-check';
import type { JsonSchema } from '../security/routes.ts';

/**
 * Generators driven by JSON Schema (the OpenAPI document's): values that fit a schema
 * ("valid-ish", so requests get past validation and reach the services), values of the
 * wrong type or just outside its bounds, and the hostile material every field gets in turn:
 * huge strings, deep nesting, control characters, lone surrogates, broken encodings.
 */

export type Path = (string | number)[];

/** Domain strings that make generated values meet the services, not only the validators. */
export type Pools = { strings: string[]; data: unknown[] };

// Strings that have broken parsers, databases, templates and logs before.
export const NASTY: string[] = [
  '', ' ', '\u0000', 'a\u0000b', '\u0001\u001f\u007f', '\t\r\n', '\u2028\u2029', '\ufeff', '\u202e', 'e\u0301', '😀', '👨‍👩‍👧',
  '\ud800', '\udfff', 'x\udbffy', '\uffff', '\ufffe', 'ÿ', 'İ', 'ß',
  '{{', '}}', '{{ }}', '{{ x | }}', '{{ data | pad_left: 100000 }}', '{{ data | json: \'$..a\' }}', '{% raw %}',
  "'", '"', '\\', '\\u0000', "'; DROP TABLE tokens; --", '%', '%00', '%s%n%x', '../../etc/passwd', '/', '//', '*', '**', '?', '.', '..',
  '__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', '$where', 'null', 'undefined', 'NaN', '-0', '1e309', '0x10',
  'A'.repeat(501), 'é'.repeat(300),
];

/** Percent-encodes any string, lone surrogates included (as U+FFFD, which is what UTF-8 can carry). */
export function encode(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-_.~]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Node's client refuses header values outside tab, visible ASCII and Latin-1: fold the rest into range. */
export function headerSafe(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)! & 0xff;
    out += c === 9 || (c >= 0x20 && c !== 0x7f) ? String.fromCharCode(c) : '?';
  }
  return out;
}

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
  // PostgreSQL text cannot hold U+0000: it deserves more than its share of the draws.
  { weight: 1, arbitrary: fc.tuple(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 })).map(([x, y]) => `${x}\u0000${y}`) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.array(fc.oneof(fc.constantFrom(...NASTY), fc.string({ maxLength: 5 })), { minLength: 1, maxLength: 6 }).map((a) => a.join('')) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
);

/** 100 KB to 1.5 MB: under and over the 1 MiB body limit. */
export const hugeString: fc.Arbitrary<string> = fc
  .record({ n: fc.integer({ min: 100_000, max: 1_500_000 }), unit: fc.constantFrom('a', 'é', '😀', '\u0000', '{{ ', '\\', '"', '%') })
  .map(({ n, unit }) => unit.repeat(Math.max(1, Math.floor(n / Buffer.byteLength(JSON.stringify(unit).slice(1, -1))))));

/** JSON text nested `depth` deep, raw: built as text so it costs nothing to generate or to stringify. */
export const deepJson: fc.Arbitrary<string> = fc
  .record({ depth: fc.oneof(fc.integer({ min: 10, max: 2_000 }), fc.integer({ min: 2_000, max: 200_000 })), kind: fc.constantFrom('array', 'object', 'mixed', 'string-leaf') })
  .map(({ depth, kind }) => {
    if (kind === 'array') return '['.repeat(depth) + ']'.repeat(depth);
    if (kind === 'object') return '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
    if (kind === 'string-leaf') return '{"a":['.repeat(depth) + '"{{ x }}"' + ']}'.repeat(depth);
    return '[{"a":'.repeat(depth) + 'null' + '}]'.repeat(depth);
  });

const anyJson = fc.jsonValue({ maxDepth: 3 });

function typesOf(schema: JsonSchema): string[] | undefined {
  if (schema.const !== undefined || schema.enum) return [...new Set([...(schema.enum ?? [schema.const])].map((v) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)))];
  if (schema.anyOf) return schema.anyOf.flatMap((s: JsonSchema) => typesOf(s) ?? []);
  if (schema.type === undefined) return undefined;
  return [schema.type].flat();
}

/** Values that fit the schema, leaning on the domain pools so services see plausible input. */
export function fromSchema(schema: JsonSchema, pools: Pools, depth = 0): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  if (Array.isArray(schema.anyOf)) return fc.oneof(...schema.anyOf.map((s: JsonSchema) => fromSchema(s, pools, depth)));
  const types = typesOf(schema);
  if (!types) return depth > 2 ? anyJson : fc.oneof(anyJson, fc.constantFrom(...pools.data), fc.constantFrom(...pools.strings));
  if (types.length > 1) return fc.oneof(...types.map((t) => fromSchema({ ...schema, type: t }, pools, depth)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true });
    case 'string':
      return stringFor(schema, pools);
    case 'array': {
      const items = fromSchema(schema.items ?? {}, pools, depth + 1);
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 4, Math.max(4, schema.minItems ?? 0)) };
      return schema.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (v) => JSON.stringify(v) }) : fc.array(items, constraints);
    }
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, JsonSchema>;
      if (Object.keys(props).length === 0) {
        const value = typeof schema.additionalProperties === 'object' ? fromSchema(schema.additionalProperties, pools, depth + 1) : anyJson;
        return fc.dictionary(stringFor(schema.propertyNames ?? { maxLength: 20 }, pools), value, { maxKeys: Math.min(schema.maxProperties ?? 4, 4) });
      }
      const model = Object.fromEntries(Object.entries(props).map(([k, s]) => [k, fromSchema(s, pools, depth + 1)]));
      return fc.record(model, { requiredKeys: (schema.required ?? []).filter((k: string) => k in props) }) as fc.Arbitrary<unknown>;
    }
    default:
      return anyJson;
  }
}

function stringFor(schema: JsonSchema, pools: Pools): fc.Arbitrary<string> {
  if (schema.format === 'uuid') return fc.uuid();
  if (schema.format === 'date-time') return fc.date({ min: new Date('1970-01-01'), max: new Date('2200-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === 'email') return fc.emailAddress();
  const min = schema.minLength ?? 0;
  const max = Math.min(schema.maxLength ?? 60, 60);
  const fits = (s: string) => s.length >= min && s.length <= (schema.maxLength ?? Infinity);
  const options: fc.Arbitrary<string>[] = [fc.string({ minLength: Math.min(min, max), maxLength: Math.max(min, max) })];
  if (schema.pattern) {
    try {
      options.push(fc.stringMatching(new RegExp(schema.pattern)).filter(fits));
    } catch {
      // A pattern fast-check cannot generate from: plain strings and the pools still apply.
    }
  }
  const pooled = pools.strings.filter(fits);
  if (pooled.length) options.push(fc.constantFrom(...pooled));
  return fc.oneof(...options);
}

const JSON_TYPES = ['string', 'integer', 'number', 'boolean', 'null', 'array', 'object'] as const;

function ofType(type: (typeof JSON_TYPES)[number]): fc.Arbitrary<unknown> {
  switch (type) {
    case 'string':
      return fc.oneof(fc.constantFrom('1', 'true', 'null', '[]', '{}', ''), hostileString);
    case 'integer':
      return fc.oneof(fc.integer(), fc.constantFrom(0, -1, 2 ** 31, 2 ** 53, -(2 ** 63), Number.MAX_SAFE_INTEGER));
    case 'number':
      return fc.constantFrom(0.5, -1.5, 1e308, -1e-308, 3.14159);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(anyJson, { maxLength: 3 });
    case 'object':
      return fc.dictionary(fc.oneof(fc.string({ maxLength: 8 }), fc.constantFrom('__proto__', 'constructor', '')), anyJson, { maxKeys: 3 });
  }
}

/** A value the schema refuses: another JSON type, or the right type just outside its bounds. */
export function wrongValue(schema: JsonSchema): fc.Arbitrary<unknown> {
  const allowed = typesOf(schema);
  const options: fc.Arbitrary<unknown>[] = [];
  if (allowed) {
    const wrong = JSON_TYPES.filter((t) => !allowed.includes(t) && !(t === 'integer' && allowed.includes('number')));
    if (wrong.length) options.push(fc.constantFrom(...wrong).chain(ofType));
  }
  if (schema.enum) options.push(fc.constantFrom('not-in-enum', String(schema.enum[0]).toUpperCase(), ` ${schema.enum[0]}`));
  if (typeof schema.maxLength === 'number') options.push(fc.constant('x'.repeat(schema.maxLength + 1)));
  if (typeof schema.minLength === 'number' && schema.minLength > 0) options.push(fc.constant(''));
  if (schema.format) options.push(fc.constantFrom('not-a-' + schema.format, '2024-13-45T25:61:61Z', '2024-12-31T23:59:60Z', '0', '', '00000000-0000-0000-0000-00000000000g'));
  if (schema.pattern) options.push(fc.constantFrom('', '.', '..', 'a b', 'a/b', 'x'.repeat(201), '\u0000'));
  if (typeof schema.minimum === 'number') options.push(fc.constant(schema.minimum - 1));
  if (typeof schema.maximum === 'number') options.push(fc.constant(schema.maximum + 1));
  if (allowed?.includes('integer')) options.push(fc.constantFrom(1.5, 1e300, -1e300));
  if (typeof schema.maxItems === 'number') options.push(fc.constant(Array.from({ length: schema.maxItems + 1 }, (_, i) => (schema.uniqueItems ? i : 'x'))));
  if (typeof schema.minItems === 'number' && schema.minItems > 0) options.push(fc.constant([]));
  if (schema.uniqueItems) options.push(fc.constant(['*', '*']));
  if (schema.required?.length) options.push(fc.constant({}));
  if (schema.additionalProperties === false) options.push(fc.constant({ not_a_known_property: 1 }));
  if (typeof schema.maxProperties === 'number') {
    options.push(fc.constant(Object.fromEntries(Array.from({ length: schema.maxProperties + 1 }, (_, i) => [`k${i}`, 'v']))));
  }
  if (!options.length) options.push(hostileJson);
  return fc.oneof(...options);
}

/** Any JSON, weighted towards what hurts: nasty strings and keys, big numbers, mixed nesting. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  anyJson,
  hostileString,
  fc.dictionary(hostileString, fc.oneof(hostileString, anyJson), { maxKeys: 4 }),
  fc.array(fc.oneof(hostileString, anyJson), { maxLength: 4 }),
  fc.constantFrom(1e308, -1e308, 5e-324, Number.MAX_SAFE_INTEGER + 2, -0),
);

/** Every place in a schema a value can go, the root first: `[]`, `['rules', 0, 'priority']`, … */
export function fieldsOf(schema: JsonSchema, path: Path = [], out: { path: Path; schema: JsonSchema }[] = [], depth = 0): { path: Path; schema: JsonSchema }[] {
  out.push({ path, schema });
  if (depth > 4) return out;
  for (const option of schema.anyOf ?? []) if (option.type === 'object' || option.type === 'array') fieldsOf(option, path, out, depth + 1);
  const types = [schema.type].flat();
  if (types.includes('object')) {
    for (const [k, s] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) fieldsOf(s, [...path, k], out, depth + 1);
    if (typeof schema.additionalProperties === 'object') fieldsOf(schema.additionalProperties, [...path, 'some_key'], out, depth + 1);
    for (const [pattern, s] of Object.entries((schema.patternProperties ?? {}) as Record<string, JsonSchema>)) {
      fieldsOf(s, [...path, pattern.replace(/[\^$\\[\]{}().*+?|]/g, '').replace(/\d+,?\d*/g, '') || 'k'], out, depth + 1);
    }
  }
  if (types.includes('array') && schema.items) fieldsOf(schema.items, [...path, 0], out, depth + 1);
  return out;
}

/** A copy of `base` with `value` at `path`, creating (or replacing non-container) parents on the way. */
export function setAt(base: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  const container: any = typeof head === 'number' ? (Array.isArray(base) ? [...base] : []) : base && typeof base === 'object' && !Array.isArray(base) ? { ...base } : {};
  const current = container[head];
  Object.defineProperty(container, head, { value: setAt(current, rest, value), enumerable: true, writable: true, configurable: true });
  return container;
}

/** JSON text with raw JSON text spliced in at `path` (for nesting too deep to build as objects). */
export function spliceRaw(base: unknown, path: Path, raw: string): string {
  const marker = `__fuzz_raw_${Math.random().toString(36).slice(2)}__`;
  return JSON.stringify(setAt(base, path, marker)).replace(JSON.stringify(marker), () => raw);
}

export const MALFORMED_JSON: string[] = [
  '{', '}', '[', ']', '{"a":}', '{"a" 1}', "{'a':1}", '{"a":1,}', '[1,2', '[1,,2]', 'nul', 'tru', 'NaN', 'Infinity', '-', '01', '1.', '.5', '+1',
  '"unterminated', '"\\x"', '"\\u12"', '"\\ud800"', '{"a":"\\udfff\\ud800"}', '{"__proto__":{"polluted":1}}', '{"a":{"__proto__":[]}}',
  '{"constructor":{"prototype":{"polluted":1}}}', '{"a":1}{"b":2}', '{"a":1} trailing', '\ufeff{}', '{"a":1e999999}', '{"a":-1e999999}',
  '{"a":123456789012345678901234567890123456789}', '{"a":1,"a":2}', '\u0000', '{"a":"\u0000"}', ' '.repeat(1000), '\n\t\r ', '/* */{}',
  '{"a":01}', '{"a":0x10}', '{a:1}', '[]]', '{}}', '{"":""}', '"just a string"', '42', 'true', 'null', '[]', '{"a":[' + '1,'.repeat(10_000) + '1]}',
];

/** Byte sequences that are not UTF-8: overlong forms, encoded surrogates, stray continuation bytes. */
export const BAD_UTF8: Buffer[] = [
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xc0, 0xaf]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0x80, 0x80]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0xe2, 0x82]),
];

export const CONTENT_TYPES: (string | undefined)[] = [
  undefined, '', 'text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/octet-stream',
  'application/json; charset=utf-16', 'application/json; charset=latin1', 'application/json; charset=nope', 'APPLICATION/JSON', 'Application/Json ;charset=UTF-8',
  'application/json;;;', 'application/json; boundary=', 'application/jsonx', 'application/merge-patch+json', 'application/json-patch+json',
  'application/problem+json', 'application/vnd.api+json', '*/*', 'application/*', 'json', ';', '/', 'text/json', 'application/json, text/plain',
  'a'.repeat(3000), 'application/json; ' + 'x=1; '.repeat(500),
];
