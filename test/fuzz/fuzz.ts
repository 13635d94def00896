/**
 * The fuzz driver (started by test/fuzz/run.ts, which provides the database and scans the
 * logs): one real Coffer, two tenants, every operation of its OpenAPI document fuzzed per
 * category with fast-check. Checked on every answer: no 5xx, problem+json on every 4xx (a
 * `proxy_error` for proxy invocations) with field paths on 400, nothing stored changed by a
 * refusal, another tenant's ids never answered with success; after each route, /ping.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import fc from 'fast-check';
import { createOtherTenant } from '../helpers/http.ts';
import { rememberSecret, startTestServer } from '../helpers/server.ts';
import { createPathResources, PAN, tenantKeys, TRIVIAL_REACTOR, type TenantKeys } from '../security/resources.ts';
import { fetchOpenApi, keyTypeOf, label, operationsOf, type Operation } from '../security/routes.ts';
import { encode, type Pools } from './arbitraries.ts';
import { closeClient, send, stateWatch, type RawRequest, type RawResponse } from './client.ts';
import { categoriesFor, type Plan } from './plans.ts';

const RUNS = Number(process.env.FUZZ_RUNS || 15);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : (Date.now() ^ (Math.random() * 2 ** 31)) | 0;
const SHRINK = process.env.FUZZ_SHRINK !== '0';
const ONLY = process.env.FUZZ_ONLY; // a substring of "METHOD /path", to fuzz some routes only
/** A request slower than this is shown with its route: slowness under hostile input is a finding too. */
const SLOW_MS = Number(process.env.FUZZ_SLOW_MS || 1000);
const SSN = '078-05-1120';
/** A 400's field paths name the part of the request they are about. */
const FIELD_PATH = /^(body|query|params|headers|path|request)([.[]|$)/;
const SECRET_VALUE = 'fuzz-secret-config-value-93f1';
const BANK_ACCOUNT = '000111222333';
const INFLIGHT = process.env.FUZZ_SUMMARY ? `${process.env.FUZZ_SUMMARY}.inflight` : undefined;
/** Response fields that carry secrets (keys, session keys, nonces, webhook secrets). */
const SECRET_FIELDS = ['key', 'api_key', 'session_key', 'nonce', 'secret'];

type Violation = { route: string; category: string; problems: string[]; request: string; response: string };
const violations: Violation[] = [];
let requests = 0;
let serverErrors = 0;
let routesDone = 0;

process.stdout.write(`seed ${SEED} (FUZZ_SEED replays it), ${RUNS} runs per category and route${ONLY ? `, routes matching ${ONLY}` : ''}\n`);

const echo = await startEcho();
const server = await startTestServer({
  OUTBOUND_ALLOWLIST: '127.0.0.1',
  // No job runner or sweeper: nothing changes the database behind a request's back.
  WORKERS: '0',
  PROXY_ANONYMOUS_RATE: '100000',
  PROXY_ANONYMOUS_BURST: '100000',
  // Members are made by accepting invitations (test/security/resources.ts), many times over.
  PEOPLE_RATE_PER_MINUTE: '100000',
  REACTOR_TIMEOUT_MS: '5000',
  PROXY_TIMEOUT_MS: '10000',
});
const base = server.url;
const a = await tenantKeys(base, server.tenantId, server.key);
const other = await createOtherTenant(server);
const b = await tenantKeys(base, other.tenant_id, other.api_key);
rememberSecret(PAN, SSN, SECRET_VALUE, BANK_ACCOUNT);

async function post(t: TenantKeys, type: 'management' | 'private', path: string, body: unknown): Promise<any> {
  const res = await send(base, { method: 'POST', path, headers: { 'svc-api-key': t.keys[type], 'content-type': 'application/json' }, body: JSON.stringify(body) });
  if (res.status >= 300) throw new Error(`fixture POST ${path}: ${res.status} ${res.text}`);
  return JSON.parse(res.text);
}

const year = new Date().getUTCFullYear() + 2;
const card = await post(a, 'private', '/tokens', { id: 'fuzz-card', type: 'card', data: { number: PAN, expiration_month: 12, expiration_year: year, cvc: '123' } });
const ssn = await post(a, 'private', '/tokens', { type: 'social_security_number', data: SSN, metadata: { k: 'v' }, search_indexes: ['{{ data | reveal_last: 4 }}'] });
const foreignCard = await post(b, 'private', '/tokens', { type: 'card', data: { number: PAN, expiration_month: 1, expiration_year: year } });
// The token test/security/resources.ts's example bank account verification names.
const bank = await post(a, 'private', '/tokens', { id: 'fuzz-bank', type: 'bank', data: { routing_number: '021000021', account_number: BANK_ACCOUNT } });
const proxy = async (t: TenantKeys, extra: Record<string, unknown>) => {
  const p = await post(t, 'management', '/proxies', { name: 'fuzz', destination_url: echo.url('/api'), require_auth: true, configuration: { secret: SECRET_VALUE }, ...extra });
  rememberSecret(p.key);
  return p.key as string;
};
const appId = (await post(a, 'management', '/applications', { name: 'proxy app', type: 'private', permissions: [], rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:use'] }] })).id;
const proxyKeys: Record<'auth' | 'anon' | 'transform' | 'foreign', string> = {
  auth: await proxy(a, {}),
  anon: await proxy(a, { require_auth: false, application: { id: appId } }),
  transform: await proxy(a, {
    request_transform: { code: 'module.exports = async (req) => ({ body: req.args.body, headers: req.args.headers });' },
    response_transform: { type: 'mask', matcher: 'regex', expression: '(\\d{4})', replacement: '*' },
  }),
  foreign: await proxy(b, {}),
};
await post(a, 'management', '/reactors', { name: 'fuzz', code: TRIVIAL_REACTOR, configuration: { secret: SECRET_VALUE } });
await post(a, 'management', '/webhooks', { name: 'fuzz', url: echo.url('/hook'), events: ['*'] });

const expressions = [
  `{{ ${card.id} }}`, `{{ ${card.id} | json: '$.number' | last4 }}`, `{{ token: ${ssn.id} }}`, `{{ ${ssn.id} | reveal_last: 4 }}`, `{{ ${foreignCard.id} }}`,
  '{{ no-such-token }}', `{{ ${card.id} | nope }}`, `{{ ${card.id} | json: '$.number' | pad_left: 100000 }}`, `{{ ${card.id} | reveal: -1 }}`,
  `{{ ${card.id} | hmac: missing }}`, `{{ ${card.id}`, '{{', `x {{ ${ssn.id} }} y {{ ${card.id} | card_mask }}`, `{{ ${card.id} | json: '$..a' }}`,
];
const pools: Pools = {
  strings: ['/', '/pci/', '/general/', '/a/b/', 'card', 'token', 'private', 'management', card.id, ssn.id, foreignCard.id, bank.id, 'US', '021000020', appId, '*', 'fuzz*', 'type:card', 'metadata.k:v', ...expressions],
  data: [
    { number: PAN, expiration_month: 12, expiration_year: year },
    SSN,
    '123456789',
    '011000015',
    { routing_number: '011000015', account_number: '1234567890' },
    ...expressions,
    { n: 1, nested: { a: [1, 2, 3] } },
  ],
};

const doc = await fetchOpenApi(base);
const operations = operationsOf(doc).filter((op) => !ONLY || label(op).includes(ONLY));
const state = await stateWatch(server.config.databaseUrl!);
// The watch must see a change when there is one, or its silence proves nothing.
await state.before();
await post(a, 'management', '/webhooks', { name: 'watch check', url: echo.url('/hook'), events: ['token.created'] });
if ((await state.after(true)).length === 0) throw new Error('the state watch missed a committed change: the no-state-change check is broken');

for (const op of operations) {
  const started = performance.now();
  const counts = { total: 0, '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 };
  let slowest = { ms: 0, what: '' };
  const type = op.secured ? keyTypeOf(op) : undefined;
  const fixtures = { own: op.pathParams.length ? await createPathResources(op, a) : {}, foreign: op.pathParams.length ? await createPathResources(op, b) : {} };

  for (const category of categoriesFor(op, pools, expressions)) {
    let last: Violation | undefined;
    const property = fc.asyncProperty(category.arb, async (plan) => {
      const { request, foreign } = materialize(op, plan, fixtures, type);
      await state.before();
      // Written before sending: if the process dies on this request, run.ts reports what it was.
      if (INFLIGHT) {
        const what = `${label(op)} [${category.name}] ${violation(op, category.name, [], request).request.slice(0, 2000)}`;
        fs.writeFileSync(INFLIGHT, JSON.stringify({ requests, routes: routesDone, request: what }));
      }
      let res: RawResponse;
      try {
        res = await send(base, request);
      } catch (err) {
        serverErrors++;
        last = violation(op, category.name, [`no answer: ${(err as Error).message}`], request);
        return false;
      }
      requests++;
      counts.total++;
      if (process.env.FUZZ_TRACE_SLOW && res.ms > SLOW_MS) process.stdout.write(`      slow ${Math.round(res.ms)} ms: ${violation(op, category.name, [], request, res).request.slice(0, 600)} → ${res.status}\n`);
      if (res.ms > slowest.ms) slowest = { ms: res.ms, what: `[${category.name}] ${violation(op, category.name, [], request, res).request.slice(0, 160)} → ${res.status}` };
      counts[`${Math.floor(res.status / 100)}xx` as '2xx'] = (counts[`${Math.floor(res.status / 100)}xx` as '2xx'] ?? 0) + 1;
      if (res.status < 300) rememberSecretsIn(op, res);
      const problems = verify(op, res);
      if (res.status >= 500) serverErrors++;
      problems.push(...(await state.after(res.status >= 400)));
      if (foreign && res.status >= 200 && res.status < 300) problems.push(`another tenant's id answered ${res.status}`);
      // A successful DELETE of a fixture: make another, so later requests still reach a real resource.
      if (op.method === 'DELETE' && res.status < 300 && op.pathParams.length) fixtures.own = await createPathResources(op, a);
      if (problems.length) {
        last = violation(op, category.name, problems, request, res);
        return false;
      }
      return true;
    });
    try {
      await fc.assert(property, { numRuns: RUNS, seed: seedFor(label(op), category.name), endOnFailure: !SHRINK, interruptAfterTimeLimit: 120_000 });
    } catch (err) {
      if (last) violations.push(last);
      const cause = (err as Error).cause as Error | undefined;
      if (!last) violations.push({ route: label(op), category: category.name, problems: [`the check itself failed: ${cause?.stack ?? cause}`], request: '', response: '' });
      process.stdout.write(`  ✗ ${label(op)} [${category.name}]: ${(last?.problems ?? [`the check itself failed: ${cause?.stack ?? (err as Error).message}`]).join('; ').slice(0, 1000)}\n`);
      if (last) process.stdout.write(`      request:  ${last.request}\n      response: ${last.response}\n`);
      process.stdout.write(`      ${firstLine((err as Error).message)}\n`);
    }
  }

  const ping = await send(base, { method: 'GET', path: '/ping', headers: {} }, 10_000).catch((err: Error) => ({ status: 0, text: err.message }) as RawResponse);
  routesDone++;
  const ms = Math.round(performance.now() - started);
  process.stdout.write(
    `  ${label(op).padEnd(48)} ${String(counts.total).padStart(5)} requests  2xx ${counts['2xx']}  4xx ${counts['4xx']}  5xx ${counts['5xx']}  ${ms} ms\n`,
  );
  if (slowest.ms > SLOW_MS) process.stdout.write(`      slowest ${Math.round(slowest.ms)} ms: ${slowest.what}\n`);
  if (ping.status !== 200) {
    serverErrors++;
    violations.push({ route: label(op), category: 'ping', problems: [`/ping after the route's batch answered ${ping.status} ${ping.text}`], request: 'GET /ping', response: '' });
    process.stdout.write(`  ✗ the server stopped answering /ping after ${label(op)}\n`);
    break;
  }
}

await state.close();
closeClient();
await server.stop();
await echo.close();

const summary = { requests, routes: routesDone, operations: operations.length, serverErrors, violations: violations.length };
if (process.env.FUZZ_SUMMARY) fs.writeFileSync(process.env.FUZZ_SUMMARY, JSON.stringify(summary));
process.stdout.write(`${violations.length} violations in ${routesDone} of ${operations.length} routes\n`);
process.exit(violations.length === 0 && serverErrors === 0 && routesDone === operations.length ? 0 : 1);

// ---- helpers ------------------------------------------------------------------------

function seedFor(route: string, category: string): number {
  return createHash('sha256').update(`${SEED}\u0000${route}\u0000${category}`).digest().readInt32BE(0);
}

/**
 * Keys, session keys, nonces and webhook secrets the fuzz got back join the secrets the log scan
 * looks for: from the fields the route's response schema declares, never from echoed input.
 */
function rememberSecretsIn(op: Operation, res: RawResponse): void {
  const fields = new Set(SECRET_FIELDS.filter((f) => op.responseFields.has(f)));
  if (fields.size === 0 || !/json/.test(String(res.headers['content-type'] ?? ''))) return;
  const walk = (node: unknown, depth: number): void => {
    if (depth > 4 || node === null || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (fields.has(k) && typeof v === 'string' && v.length >= 16) rememberSecret(v);
      else walk(v, depth + 1);
    }
  };
  try {
    walk(JSON.parse(res.text), 0);
  } catch {
    // Not JSON after all: nothing to remember.
  }
}

function firstLine(s: string): string {
  return s.split('\n').find((l) => /seed|Counterexample|Shrunk/i.test(l))?.slice(0, 300) ?? s.split('\n')[0].slice(0, 300);
}

function materialize(op: Operation, plan: Plan, fixtures: { own: Record<string, string>; foreign: Record<string, string> }, type: ReturnType<typeof keyTypeOf> | undefined) {
  let foreign = false;
  let path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = plan.path?.[name] ?? { own: true };
    const own = fixtures.own[name];
    if ('own' in v) return encode(own);
    if ('foreign' in v) {
      foreign = true;
      return encode(fixtures.foreign[name]);
    }
    if ('variant' in v) {
      if (v.variant === 'upper') return encode(own.toUpperCase());
      if (v.variant === 'suffix') return encode(`${own}x`);
      if (v.variant === 'braces') return encode(`{${own}}`);
      return encode(own.replace(/[0-9a-f]/g, '0'));
    }
    return v.raw;
  });
  path += plan.suffix ?? '';
  const query: string[] = plan.query ? [plan.query] : [];
  const key = type ? a.keys[type] : undefined;
  const headers: Record<string, string | string[]> = {};

  if (plan.proxy) {
    const p = plan.proxy;
    const proxyKey = p.which === 'bogus' ? 'proxy_bogus' : p.which === 'none' ? undefined : proxyKeys[p.which];
    if (proxyKey && (p.via === 'header' || p.via === 'both')) headers['svc-proxy-key'] = proxyKey;
    if (proxyKey && p.via !== 'header') {
      // Spellings the proxy reads as its key (and one it does not): the log scan proves none reaches a log line.
      const name = { 'query-upper': 'SVC-PROXY-KEY', 'query-encoded': 'svc%2Dproxy%2Dkey', 'query-mangled': '%3Fsvc-proxy-key' }[p.via as string] ?? 'svc-proxy-key';
      query.push(`${name}=${p.via === 'both' ? proxyKeys.foreign : encode(proxyKey)}`);
    }
    const apiKey = { own: a.keys.private, none: undefined, foreign: b.keys.private, management: a.keys.management, bogus: 'key_bogus' }[p.apiKey];
    if (apiKey && (p.which === 'auth' || p.which === 'transform' || p.which === 'foreign' || p.apiKey !== 'own')) headers['svc-api-key'] = apiKey;
  } else if (key) {
    headers['svc-api-key'] = key;
  }
  for (const [name, value] of Object.entries(plan.headers ?? {})) {
    headers[name] = Array.isArray(value) ? value.map((v) => (v === '{{key}}' ? key ?? a.keys.private : v)) : value;
  }
  if (plan.body !== undefined) {
    const contentType = plan.contentType === undefined ? op.body?.contentType ?? 'application/json' : plan.contentType;
    if (contentType !== null) headers['content-type'] = contentType;
  }
  if (query.length) path += `?${query.join('&')}`;
  return { request: { method: op.method, path, headers, body: plan.body } satisfies RawRequest, foreign };
}

/** What every answer must look like, whatever the request was. */
function verify(op: Operation, res: RawResponse): string[] {
  const problems: string[] = [];
  if (res.status >= 500) problems.push(`server error ${res.status}`);
  if (res.status < 400) {
    if (op.path === '/proxy' && res.status < 300 && !res.headers['svc-proxy-destination-status']) problems.push('a proxy success without SVC-PROXY-DESTINATION-STATUS');
    return problems;
  }
  const type = String(res.headers['content-type'] ?? '');
  let body: any;
  try {
    body = JSON.parse(res.text);
  } catch {
    problems.push(`a ${res.status} whose body is not JSON (content-type "${type}")`);
    return problems;
  }
  let problem = body;
  if (op.path === '/proxy') {
    // The destination's own answer passes through as it is; only Coffer's errors are checked.
    if (res.headers['svc-proxy-destination-status']) return problems;
    // Refused before routing (headers too large, a malformed, overlong or unknown path): no proxy to speak for yet.
    const unrouted = /^application\/problem\+json/.test(type) && [400, 404, 414, 431].includes(res.status);
    if (!unrouted) {
      if (!/^application\/json/.test(type)) problems.push(`a proxy error with content-type "${type}"`);
      problem = body?.proxy_error;
      if (!problem) return [...problems, `a ${res.status} from a proxy invocation without proxy_error`];
    }
  } else if (!/^application\/problem\+json/.test(type)) {
    problems.push(`a ${res.status} with content-type "${type}", not application/problem+json`);
  }
  if (problem?.status !== res.status) problems.push(`problem status ${problem?.status} on a ${res.status}`);
  if (typeof problem?.title !== 'string' || typeof problem?.detail !== 'string' || typeof problem?.type !== 'string') problems.push('a problem without type, title and detail');
  if (res.status === 400) {
    const errors = problem?.errors;
    const paths = errors && typeof errors === 'object' ? Object.keys(errors) : [];
    if (paths.length === 0) problems.push('a 400 without field errors');
    for (const p of paths) {
      if (!FIELD_PATH.test(p)) problems.push(`field path "${p}" does not name a part of the request`);
      if (!Array.isArray(errors[p]) || !errors[p].every((m: unknown) => typeof m === 'string')) problems.push(`errors["${p}"] is not a list of messages`);
    }
  }
  return problems;
}

function violation(op: Operation, category: string, problems: string[], request: RawRequest, res?: RawResponse): Violation {
  const body = request.body === undefined ? '' : ` body(${request.body.length} ${Buffer.isBuffer(request.body) ? 'bytes' : 'chars'}): ${JSON.stringify(request.body.toString().slice(0, 200))}`;
  const headers = Object.entries(request.headers)
    .filter(([k]) => k !== 'svc-api-key' && k !== 'svc-proxy-key')
    .map(([k, v]) => `${k}: ${String(v).slice(0, 60)}`)
    .join(', ');
  return {
    route: label(op),
    category,
    problems,
    request: `${request.method} ${request.path.slice(0, 300).replace(/svc(-|%2D)proxy(-|%2D)key=[^&]*/gi, 'svc-proxy-key=…')} [${headers}]${body}`,
    response: res ? `${res.status} ${String(res.headers['content-type'] ?? '')} ${res.text.slice(0, 300)}` : '(none)',
  };
}

/** The proxies' destination: answers every request with a JSON echo of what it received. */
async function startEcho() {
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ method: req.method, url: req.url, length: body.length, body: body.subarray(0, 2000).toString('utf8') }));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  return {
    url: (p = '') => `http://127.0.0.1:${port}${p}`,
    close: () => {
      srv.closeAllConnections();
      return new Promise<void>((r) => srv.close(() => r()));
    },
  };
}
