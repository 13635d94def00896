import fc from 'fast-check';
import { validBody } from '../security/resources.ts';
import type { Operation, Parameter } from '../security/routes.ts';
import {
  BAD_UTF8,
  CONTENT_TYPES,
  MALFORMED_JSON,
  deepJson,
  encode,
  fieldsOf,
  fromSchema,
  headerSafe,
  hostileJson,
  hostileString,
  hugeString,
  setAt,
  spliceRaw,
  wrongValue,
  type Pools,
} from './arbitraries.ts';

/**
 * A plan is one generated request, still symbolic where it names fixtures (an own or a
 * foreign id, a proxy and how its key travels): the driver resolves it at send time, so
 * fixtures can be recreated after a successful DELETE without invalidating the generators.
 */

export type PathValue = { own: true } | { foreign: true } | { variant: 'upper' | 'suffix' | 'braces' | 'nil-ish' } | { raw: string };

export type Plan = {
  path?: Record<string, PathValue>;
  /** Appended to the path as is (already encoded). */
  suffix?: string;
  query?: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** undefined: the operation's own content type when there is a body; null: no Content-Type header. */
  contentType?: string | null;
  /** Proxy invocations: which proxy, how its key travels, which API key goes along. */
  proxy?: { which: 'auth' | 'anon' | 'transform' | 'foreign' | 'bogus' | 'none'; via: 'header' | 'query' | 'query-upper' | 'query-encoded' | 'query-mangled' | 'both'; apiKey: 'own' | 'none' | 'foreign' | 'management' | 'bogus' };
};

export type Category = { name: string; arb: fc.Arbitrary<Plan> };

const ct = (c: string | undefined): string | null => (c === undefined ? null : c);

/** The categories every operation is fuzzed with; proxy invocations get their own. */
export function categoriesFor(op: Operation, pools: Pools, expressions: string[]): Category[] {
  if (op.path === '/proxy') return proxyCategories(op, expressions);
  const schema = op.body?.schema ?? {};
  const fields = fieldsOf(schema);
  // Mutations start from a body the route accepts as often as from a generated one, so that a bad
  // field arrives alone and what passes validation reaches the service and the database.
  const example = validBody(op)?.body;
  const base = op.body ? fc.oneof({ weight: 2, arbitrary: fc.constant(example) }, { weight: 1, arbitrary: fromSchema(schema, pools) }) : fc.constant({});
  const field = fc.constantFrom(...fields);
  const path = pathArb(op, false);
  const query = queryArb(op, pools, false);
  const common = { path, query };
  const json = (v: unknown) => (v === undefined ? undefined : JSON.stringify(v));
  // Bodies go with an idempotency key now and then: the key's request fingerprint reads the whole body too.
  const plan = (extra: fc.Arbitrary<Partial<Plan>>): fc.Arbitrary<Plan> =>
    fc.record({ ...common, extra, idem: fc.option(fc.uuid(), { nil: undefined, freq: 3 }) }).map(({ extra: e, idem, ...rest }) => ({
      ...rest,
      ...(idem ? { headers: { 'svc-idempotency-key': idem } } : {}),
      ...e,
    }));

  return [
    { name: 'valid', arb: fc.record({ ...common, body: base.map(json), idem: fc.option(fc.uuid(), { nil: undefined }) }).map(({ idem, ...p }) => ({ ...p, headers: idem ? { 'svc-idempotency-key': idem } : {} })) },
    {
      name: 'path',
      arb: fc.record({
        path: pathArb(op, true),
        suffix: fc.constantFrom('', '', '/', '//', '/..', '/%2e%2e', '/x', ';x', '%20', '.json', '%00', '%2F', '/' + 'p'.repeat(600)),
        query,
        body: base.map(json),
      }),
    },
    { name: 'query', arb: fc.record({ path, query: queryArb(op, pools, true), body: base.map(json) }) },
    { name: 'headers', arb: fc.record({ path, query, body: base.map(json), headers: headerArb() }) },
    { name: 'body.types', arb: plan(fc.tuple(base, field).chain(([b, f]) => wrongValue(f.schema).map((v) => ({ body: json(setAt(b, f.path, v)) })))) },
    {
      name: 'body.huge',
      arb: plan(
        fc.tuple(base, field, fc.oneof(hugeString, fc.integer({ min: 50_000, max: 300_000 }).map((n) => Array.from({ length: n }, () => 1)))).map(([b, f, v]) => ({ body: json(setAt(b, f.path, v)) })),
      ),
    },
    { name: 'body.deep', arb: plan(fc.tuple(base, field, deepJson).map(([b, f, raw]) => ({ body: spliceRaw(b, f.path, raw) }))) },
    {
      name: 'body.unicode',
      arb: plan(
        fc.oneof(
          fc.tuple(base, field, hostileString).map(([b, f, s]) => ({ body: json(setAt(b, f.path, s)) })),
          fc.tuple(base, field, fc.dictionary(hostileString, hostileString, { minKeys: 1, maxKeys: 3 })).map(([b, f, o]) => ({ body: json(setAt(b, f.path, o)) })),
          fc.tuple(base, field, fc.constantFrom(...BAD_UTF8)).map(([b, f, bytes]) => {
            const [before, after] = spliceRaw(b, f.path, '"\u0001MARK\u0001"').split('\u0001MARK\u0001');
            return { body: Buffer.concat([Buffer.from(before), bytes, Buffer.from(after)]) };
          }),
        ),
      ),
    },
    {
      name: 'body.malformed',
      arb: plan(
        fc.oneof(
          fc.constantFrom(...MALFORMED_JSON).map((body) => ({ body })),
          fc.string({ unit: 'binary', maxLength: 60 }).map((body) => ({ body })),
          fc.uint8Array({ maxLength: 100 }).map((bytes) => ({ body: Buffer.from(bytes) })),
          fc.tuple(base, fc.nat()).map(([b, cut]) => {
            const text = JSON.stringify(b) ?? '{}';
            return { body: text.slice(0, cut % Math.max(1, text.length)) };
          }),
        ),
      ),
    },
    { name: 'content-type', arb: plan(fc.tuple(base, fc.constantFrom(...CONTENT_TYPES)).map(([b, c]) => ({ body: json(b), contentType: ct(c) }))) },
  ];
}

const RAW_PATH_GARBAGE = ['%', '%zz', '%00', '%2F', '%2e%2e', '..', '.', '%ED%A0%80', '%C0%AF', '%FF', 'x;y', 'x,y', '*', '%20', '+', 'a'.repeat(501), 'a'.repeat(200), '0', '-1', 'null', 'undefined', '{id}', '%7Bid%7D'];

function pathArb(op: Operation, hostile: boolean): fc.Arbitrary<Record<string, PathValue>> {
  const one = (): fc.Arbitrary<PathValue> =>
    hostile
      ? fc.oneof(
          { weight: 1, arbitrary: fc.constant({ own: true } as const) },
          { weight: 2, arbitrary: fc.constant({ foreign: true } as const) },
          { weight: 1, arbitrary: fc.constantFrom('upper', 'suffix', 'braces', 'nil-ish').map((variant) => ({ variant }) as PathValue) },
          { weight: 1, arbitrary: fc.uuid().map((u) => ({ raw: u })) },
          { weight: 3, arbitrary: hostileString.filter((s) => s.length > 0).map((s) => ({ raw: encode(s) })) },
          { weight: 2, arbitrary: fc.constantFrom(...RAW_PATH_GARBAGE).map((raw) => ({ raw })) },
        )
      : fc.oneof(
          { weight: 4, arbitrary: fc.constant({ own: true } as const) },
          { weight: 1, arbitrary: fc.constant({ foreign: true } as const) },
          { weight: 1, arbitrary: fc.uuid().map((u) => ({ raw: u })) },
        );
  return fc.record(Object.fromEntries(op.pathParams.map((p) => [p.name, one()])));
}

function serialize(name: string, value: unknown): string {
  const values = Array.isArray(value) ? value : [value];
  return values.map((v) => `${encode(name)}=${encode(typeof v === 'string' ? v : JSON.stringify(v))}`).join('&');
}

const BAD_QUERY_VALUES = [
  '', 'abc', 'a%00b', '%00%00', '-1', '0', '1.5', '1e3', '1e999', '99999999999999999999', 'NaN', 'Infinity', '-0', '0x1F', '%201', '1%20', '[1]', 'true', 'null',
  '%00', '%', '%zz', '%ff%fe', '%C0%AF', '%ED%A0%80', '%E2%80%AE', '+', '%2B', '%26', '%3D', '2024-13-45T25:61:61Z', '2024-12-31T23:59:60Z',
];
const BAD_QUERY_PAIRS = [
  '__proto__=x', '__proto__[x]=1', 'constructor[prototype][x]=1', 'metadata.a=1', 'metadata.=1', `metadata.${'x'.repeat(150)}=1`, 'metadata.a.b=1',
  'a[b][c]=1', '=1', '&', '=', '&&&', 'zzz', 'zzz=', '%=%', '%zz=1', 'page=1&page=2', 'size=1&size=abc', 'start=', 'start=%00', 'start=eyJ4IjoxfQ',
  `start=${Buffer.from('{"id":"x","created_at":"not a date"}').toString('base64url')}`, `start=${Buffer.from('[]').toString('base64url')}`,
  `start=${Buffer.from('{"id":"\\u0000"}').toString('base64url')}`,
];

function badQueryValue(p: Parameter): fc.Arbitrary<string> {
  const s = p.schema;
  const bounds = [s.minimum, s.maximum].filter((n) => typeof n === 'number').flatMap((n: number) => [String(n - 1), String(n + 1), String(n * 1000)]);
  return fc.oneof(
    fc.constantFrom(...BAD_QUERY_VALUES, ...bounds),
    hostileString.map(encode),
    wrongValue(s.type === 'array' ? s.items ?? {} : s).map((v) => encode(typeof v === 'string' ? v : JSON.stringify(v) ?? '')),
    fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'q'.repeat(n)),
  );
}

function queryArb(op: Operation, pools: Pools, hostile: boolean): fc.Arbitrary<string> {
  const params = op.queryParams;
  const valid = fc
    .tuple(...params.map((p) => fc.option(fromSchema(p.schema, pools).map((v) => serialize(p.name, v)), { nil: '' })))
    .map((parts) => parts.filter(Boolean).join('&'));
  if (!hostile) return params.length ? valid : fc.constant('');
  const bad = fc.oneof(
    ...(params.length ? [fc.constantFrom(...params).chain((p) => badQueryValue(p).map((v) => `${encode(p.name)}=${v}`))] : []),
    fc.constantFrom(...BAD_QUERY_PAIRS),
    fc.tuple(hostileString, hostileString).map(([k, v]) => `${encode(k)}=${encode(v)}`),
  );
  return fc.tuple(params.length ? valid : fc.constant(''), fc.array(bad, { minLength: 1, maxLength: 3 })).map(([v, b]) => [v, ...b].filter(Boolean).join('&'));
}

function headerArb(): fc.Arbitrary<Record<string, string | string[]>> {
  return fc.record(
    {
      'svc-idempotency-key': fc.oneof(fc.uuid(), fc.constantFrom('', ' ', '\t', 'a'.repeat(255), 'a'.repeat(256), 'é', 'with space', '"q"', 'k'.repeat(8000)), hostileString.map(headerSafe)),
      accept: fc.constantFrom('application/xml', '*/*', 'text/html', 'application/json;q=0', '', ';;', 'a'.repeat(2000)),
      'x-request-id': fc.oneof(hostileString.map(headerSafe), fc.constantFrom('a'.repeat(101), 'abc-123', '../..', '')),
      'x-filler': fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'f'.repeat(n)),
      'content-encoding': fc.constantFrom('gzip', 'br', 'deflate', 'identity', 'x-nope', 'gzip, gzip'),
      'accept-encoding': fc.constantFrom('gzip', 'br', 'zstd', 'x-nope', '*;q=0', 'identity;q=0'),
      'x-forwarded-for': fc.oneof(hostileString.map(headerSafe), fc.constantFrom('127.0.0.1', '::1, 10.0.0.1', 'unknown')),
      'svc-api-key': fc.constant(['{{key}}', 'key_bogus']),
      'if-none-match': fc.constantFrom('*', '"x"', 'W/"x"'),
      range: fc.constantFrom('bytes=0-0', 'bytes=-1', 'bytes=a-b'),
      cookie: hostileString.map(headerSafe),
    },
    { requiredKeys: [] },
  );
}

function proxyCategories(op: Operation, expressions: string[]): Category[] {
  const bodyless = op.method === 'GET';
  const exprText = fc.oneof(fc.constantFrom(...expressions), fc.array(fc.oneof(fc.constantFrom(...expressions), fc.string({ maxLength: 10 })), { maxLength: 5 }).map((a) => a.join(' ')));
  const withExpressions: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
    node: fc.oneof({ depthSize: 'small' }, exprText, hostileJson, fc.array(tie('node'), { maxLength: 3 }), fc.dictionary(fc.string({ maxLength: 8 }), tie('node'), { maxKeys: 3 })),
  })).node;
  const bodies = fc.oneof(
    withExpressions.map((v) => ({ body: JSON.stringify(v) ?? 'null', contentType: 'application/json' })),
    fc.array(fc.tuple(fc.string({ maxLength: 8 }), exprText), { maxLength: 4 }).map((pairs) => ({ body: new URLSearchParams(pairs).toString(), contentType: 'application/x-www-form-urlencoded' })),
    exprText.map((body) => ({ body, contentType: 'text/plain' })),
    fc.uint8Array({ maxLength: 200 }).map((b) => ({ body: Buffer.from(b), contentType: 'application/octet-stream' })),
  );
  const proxy = fc.record({
    which: fc.constantFrom('auth', 'anon', 'transform'),
    via: fc.constantFrom('header', 'query'),
    apiKey: fc.constant('own'),
  }) as fc.Arbitrary<NonNullable<Plan['proxy']>>;
  const suffix = fc.oneof(fc.constant(''), fc.array(fc.string({ maxLength: 8 }).map(encode), { maxLength: 3 }).map((segs) => segs.map((s) => `/${s}`).join('')));
  const query = fc.array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })), { maxLength: 3 }).map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&'));
  const valid = { proxy, suffix, query, b: bodies };
  const plan = (parts: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<Plan> =>
    fc.record({ ...valid, ...parts }).map(({ b, ...rest }: any) => ({ ...rest, ...(bodyless ? {} : b) }));

  return [
    { name: 'valid', arb: plan({}) },
    {
      name: 'keys',
      arb: plan({
        proxy: fc.record({
          which: fc.constantFrom('auth', 'anon', 'transform', 'foreign', 'bogus', 'none'),
          via: fc.constantFrom('header', 'query', 'query-upper', 'query-encoded', 'query-mangled', 'both'),
          apiKey: fc.constantFrom('own', 'none', 'foreign', 'management', 'bogus'),
        }),
      }),
    },
    {
      name: 'path',
      arb: plan({
        suffix: fc.oneof(
          fc.constantFrom('/..', '/../x', '/%2e%2e/x', '/%2E%2E', '/.', '/%2f%2f', '//', '/%5c..%5cx', '\\..', '/x/../..', '/%00', '/%', '/%zz', '/' + 'p'.repeat(3000), '/@evil.example', '/:80', '/#x', '/?'),
          hostileString.map((s) => `/${encode(s)}`),
        ),
      }),
    },
    {
      name: 'query',
      arb: plan({
        query: fc.oneof(
          fc.constantFrom(...BAD_QUERY_PAIRS, 'svc-proxy-key=', 'svc-proxy-key', 'svc-proxy-key=%', 'SVC-PROXY-KEY=x&svc-proxy-key=y'),
          fc.tuple(hostileString, hostileString).map(([k, v]) => `${encode(k)}=${encode(v)}`),
          fc.integer({ min: 1_000, max: 20_000 }).map((n) => `q=${'q'.repeat(n)}`),
        ),
      }),
    },
    {
      name: 'headers',
      arb: plan({
        headers: fc.record(
          {
            'svc-proxy-connection': fc.oneof(fc.constantFrom('close', 'keep-alive', 'upgrade', '', 'CLOSE', 'close, keep-alive'), hostileString.map(headerSafe)),
            'svc-proxy-keep-alive': hostileString.map(headerSafe),
            connection: fc.constantFrom('x-drop-me', 'close', 'upgrade', 'content-type'),
            'x-drop-me': fc.constant('1'),
            te: fc.constantFrom('trailers', 'gzip'),
            'accept-encoding': fc.constantFrom('gzip', 'br', 'x-nope', ''),
            'content-encoding': fc.constantFrom('gzip', 'br', 'deflate', 'x-nope'),
            'x-latin1': hostileString.map(headerSafe),
            'x-filler': fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'f'.repeat(n)),
            'svc-api-key': fc.constant(['{{key}}', 'key_bogus']),
          },
          { requiredKeys: [] },
        ),
      }),
    },
    {
      name: 'body',
      arb: plan({
        b: fc.oneof(
          fc.tuple(fc.constantFrom('application/json', 'application/x-www-form-urlencoded', 'text/plain'), fc.oneof(fc.constantFrom(...MALFORMED_JSON), deepJson, hugeString.map((s) => JSON.stringify({ s })))).map(([contentType, body]) => ({ body, contentType })),
          fc.tuple(fc.constantFrom(...BAD_UTF8), exprText).map(([bytes, e]) => ({ body: Buffer.concat([Buffer.from(`{"a":"${e.replace(/["\\]/g, '')}`), bytes, Buffer.from('"}')]), contentType: 'application/json' })),
          fc.constantFrom(...expressions).map((e) => ({ body: JSON.stringify(Array.from({ length: 150 }, () => e)), contentType: 'application/json' })),
          fc.constantFrom(...expressions).map((e) => ({ body: '{"a":['.repeat(3000) + JSON.stringify(e) + ']}'.repeat(3000), contentType: 'application/json' })),
        ),
      }),
    },
    { name: 'content-type', arb: plan({ b: fc.tuple(bodies, fc.constantFrom(...CONTENT_TYPES)).map(([b, c]) => ({ ...b, contentType: ct(c) })) }) },
  ];
}
