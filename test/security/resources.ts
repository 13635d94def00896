import { permissionsFor, type ApplicationType } from '../../src/access/permissions.ts';
import { call } from '../helpers/http.ts';
import { rememberSecret } from '../helpers/server.ts';
import { freshEmail, makeMember } from '../helpers/people.ts';
import { collectionsOf, label, type JsonSchema, type Operation } from './routes.ts';

/**
 * Real resources for generated route cases: the keys of a tenant, and for every collection
 * a path parameter can name, a way to create one. A route whose id names a collection not
 * listed in RESOURCES fails loudly, so no new route slips past the isolation suite.
 */

export const PAN = '4111111111111111';
export const TRIVIAL_REACTOR = 'module.exports = async (req) => ({ raw: { args: req.args === undefined ? null : req.args } });';

export type TenantKeys = {
  tenantId: string;
  base: string;
  /** A key per application type, each holding every permission of its type. */
  keys: Record<ApplicationType, string>;
};

/** Access to every permission of a type: private and public ones through a rule on the root container. */
export function fullAccess(type: ApplicationType, permissions = permissionsFor(type).map((p) => p.type)) {
  if (type === 'management') return { permissions, rules: [] };
  const unscoped = permissionsFor(type).filter((p) => !p.scoped && permissions.includes(p.type)).map((p) => p.type);
  return {
    permissions: unscoped,
    // Public keys never see data, and their rules say so.
    rules: permissions.length ? [{ priority: 1, container: '/', transform: type === 'public' ? 'redact' : 'reveal', permissions }] : [],
  };
}

/** A new application of the type holding exactly `permissions`; returns its key. */
export async function keyWith(base: string, managementKey: string, type: ApplicationType, permissions: string[], name = 'generated'): Promise<string> {
  const res = await call(base, 'POST', '/applications', { key: managementKey, body: { name, type, ...fullAccess(type, permissions) } });
  if (res.status !== 201) throw new Error(`creating a ${type} application failed: ${res.status} ${res.text}`);
  rememberSecret(res.body.key);
  return res.body.key as string;
}

export async function tenantKeys(base: string, tenantId: string, management: string): Promise<TenantKeys> {
  const all = (type: ApplicationType) => keyWith(base, management, type, permissionsFor(type).map((p) => p.type), `all ${type}`);
  return { tenantId, base, keys: { management, private: await all('private'), public: await all('public') } };
}

type Ctx = { tenant: TenantKeys; parents: string[] };
type Resource = {
  create(ctx: Ctx): Promise<string>;
  /** What a route on the resource needs done to it first, by route (`GET /3ds/sessions/{id}/challenge-result`: an authenticated session). */
  ready?: Record<string, (ctx: Ctx, id: string) => Promise<void>>;
  /** A valid body for creating one (POST on the collection), also the base the fuzz suite mutates. */
  example?: unknown;
  /** A valid body for replacing one (PUT), when the generic minimal body would not do. */
  replacement?: unknown;
};

async function created(ctx: Ctx, type: ApplicationType, path: string, body: unknown, pick = (b: any) => b.id as string, status = 201) {
  const res = await call(ctx.tenant.base, 'POST', path, { key: ctx.tenant.keys[type], body });
  if (res.status !== status) throw new Error(`POST ${path} failed: ${res.status} ${res.text}`);
  return pick(res.body);
}

const applicationBody = { name: 'generated app', type: 'private', ...fullAccess('private', ['token:read']) };
const tokenBody = { type: 'card', data: { number: PAN, expiration_month: 12, expiration_year: new Date().getUTCFullYear() + 2 }, metadata: { source: 'generated' } };
const reactorBody = { name: 'generated reactor', code: TRIVIAL_REACTOR, configuration: {} };
const proxyBody = { name: 'generated proxy', destination_url: 'https://example.com/api', require_auth: true };
const tokenIntentBody = { type: 'card', data: tokenBody.data };
/** A Google Pay test-mode token (protocolVersion Coffer), readable without keys: docs/payment-methods.md. */
const googlePayTestToken = {
  protocolVersion: 'Coffer',
  signature: 'card',
  intermediateSigningKey: { signedKey: 'test', signatures: ['test'] },
  signedMessage: JSON.stringify({ number: PAN, expiration_month: 12, expiration_year: new Date().getUTCFullYear() + 2 }),
};
/** A 3DS session of the tenant's own card token (4111111111111111: attempted, frictionless), and its authentication. */
const threedsAuthenticateBody = {
  authentication_category: 'non-payment',
  authentication_type: 'add-card',
  requestor_info: { id: 'requestor-1', name: 'Generated', url: 'https://example.com' },
  cardholder_info: { name: 'Jane Doe', email: 'jane@example.com' },
};
async function threedsSession(ctx: Ctx): Promise<string> {
  const token = await created(ctx, 'private', '/tokens', tokenBody);
  return created(ctx, 'private', '/3ds/sessions', { token_id: token, type: 'customer' });
}
const connectionBody = { name: 'generated connection', processor: 'coffer-test', settings: { settle_delay_ms: 0 } };
/** An authorized payment of the tenant's own card token (4242…: approved) through a new coffer-test connection. */
async function authorizedTransaction(ctx: Ctx): Promise<string> {
  const connection = await created(ctx, 'management', '/orchestration/connections', connectionBody);
  const token = await created(ctx, 'private', '/tokens', { type: 'card', data: { ...tokenBody.data, number: '4242424242424242' } });
  return created(ctx, 'private', '/orchestration/transactions', { amount: 1000, currency: 'USD', connection_id: connection, token });
}
const capture = async (ctx: Ctx, id: string) => {
  await created(ctx, 'private', `/orchestration/transactions/${id}/capture`, {}, () => '', 200);
};
const webhookBody = { name: 'generated webhook', url: 'https://example.com/hooks/coffer', events: ['token.created'] };

/** Keyed by the path template before the id: `/applications/{id}/keys` creates a key of application {id}. */
export const RESOURCES: Record<string, Resource> = {
  '/applications': {
    create: (ctx) => created(ctx, 'management', '/applications', applicationBody),
    example: applicationBody,
    replacement: { name: 'renamed app', ...fullAccess('private', ['token:read', 'token:use']) },
  },
  '/applications/{id}/keys': {
    create: (ctx) =>
      created(ctx, 'management', `/applications/${ctx.parents[0]}/keys`, undefined, (b) => {
        rememberSecret(b.key);
        return b.id;
      }),
  },
  '/tokens': { create: (ctx) => created(ctx, 'private', '/tokens', tokenBody), example: tokenBody },
  '/token-intents': { create: (ctx) => created(ctx, 'private', '/token-intents', tokenIntentBody), example: tokenIntentBody },
  '/webhooks': { create: (ctx) => created(ctx, 'management', '/webhooks', webhookBody), example: webhookBody, replacement: webhookBody },
  '/reactors': { create: (ctx) => created(ctx, 'management', '/reactors', reactorBody), example: reactorBody, replacement: reactorBody },
  '/reactors/{id}/results': {
    create: (ctx) => created(ctx, 'private', `/reactors/${ctx.parents[0]}/react-async`, { args: { n: 1 } }, (b) => b.asyncReactorRequestId, 202),
  },
  '/proxies': { create: (ctx) => created(ctx, 'management', '/proxies', proxyBody), example: proxyBody, replacement: proxyBody },
  '/orchestration/connections': { create: (ctx) => created(ctx, 'management', '/orchestration/connections', connectionBody), example: connectionBody },
  '/orchestration/transactions': {
    create: authorizedTransaction,
    // Refunds need a captured transaction.
    ready: { 'POST /orchestration/transactions/{transaction_id}/refunds': capture },
    // The fuzz suite's card token (test/fuzz/fuzz.ts) through a connection that is nowhere: a 404 after validation.
    example: { amount: 1000, currency: 'USD', connection_id: '00000000-0000-4000-8000-000000000000', token: 'fuzz-card' },
  },
  '/orchestration/transactions/{transaction_id}/refunds': {
    create: async (ctx) => {
      await capture(ctx, ctx.parents[0]);
      return created(ctx, 'private', `/orchestration/transactions/${ctx.parents[0]}/refunds`, { amount: 10 });
    },
  },
  '/tenants/self/invitations': {
    create: (ctx) => created(ctx, 'management', '/tenants/self/invitations', { email: freshEmail('generated'), role: 'READ_ONLY' }),
    example: { email: 'invitee@example.com', role: 'ADMIN' },
  },
  // A member is made by accepting an invitation (the e-mail read from the tenant's mail queue).
  '/tenants/self/members': { create: async (ctx) => (await makeMember(ctx.tenant.base, ctx.tenant.tenantId, ctx.tenant.keys.management, { role: 'READ_ONLY' })).member.id },
  '/3ds/sessions': {
    create: threedsSession,
    // The fuzz suite's card token (test/fuzz/fuzz.ts); elsewhere a 404.
    example: { token_id: 'fuzz-card', type: 'customer' },
    ready: {
      // A final result to read: the session authenticated (frictionless).
      'GET /3ds/sessions/{id}/challenge-result': async (ctx, id) => {
        await created(ctx, 'private', `/3ds/sessions/${id}/authenticate`, threedsAuthenticateBody, () => '', 200);
      },
    },
  },
};

/** Valid bodies of action routes that create nothing addressable; anything else falls back to the schema. */
const EXAMPLES: Record<string, unknown> = {
  'POST /tokenize': { card: tokenBody, list: [{ type: 'social_security_number', data: '123-45-6789' }], plain: 'kept' },
  'POST /detokenize': { a: 'no expressions here', n: [1, 2] },
  // The fuzz suite's bank token (test/fuzz/fuzz.ts); elsewhere a 404, which is all a test without it needs.
  'POST /enrichments/bank-account-verify': { token_id: 'fuzz-bank' },
  'POST /v2/tokens/search': { query: 'type:card', size: 5 },
  'POST /connections/google-pay/tokenize': { google_payment_method_token: googlePayTestToken },
  'POST /reactors/{id}/react': { args: { n: 1, s: 'x' } },
  'POST /reactors/{id}/react-async': { args: { n: 1 } },
  'POST /3ds/sessions/{id}/authenticate': threedsAuthenticateBody,
  'POST /orchestration/transactions/{transaction_id}/capture': {},
  'POST /orchestration/transactions/{transaction_id}/refunds': { amount: 10, reason: 'generated' },
};

/** Fails for a route whose ids name a collection RESOURCES cannot create. */
export function assertCreatable(op: Operation): void {
  for (const { collection } of collectionsOf(op)) {
    if (!RESOURCES[collection]) {
      throw new Error(
        `${label(op)}: no way to create a resource for "${collection}/{…}". Add one to RESOURCES in test/security/resources.ts ` +
          'so the isolation and fuzz suites cover this route.',
      );
    }
  }
}

/** Creates what the route's path names, parent first; returns a value per path parameter. */
export async function createPathResources(op: Operation, tenant: TenantKeys): Promise<Record<string, string>> {
  assertCreatable(op);
  const values: Record<string, string> = {};
  const parents: string[] = [];
  for (const { param, collection } of collectionsOf(op)) {
    const id = await RESOURCES[collection].create({ tenant, parents: [...parents] });
    await RESOURCES[collection].ready?.[label(op)]?.({ tenant, parents: [...parents] }, id);
    values[param] = id;
    parents.push(id);
  }
  return values;
}

/** A body the route accepts, so that what a case checks is access, not validation. */
export function validBody(op: Operation): { body: unknown; contentType: string } | undefined {
  if (!op.body) return undefined;
  const { contentType, schema } = op.body;
  if (op.method === 'PATCH') return { body: {}, contentType };
  const last = collectionsOf(op).at(-1);
  const replacement = op.method === 'PUT' && last ? RESOURCES[last.collection]?.replacement : undefined;
  const creation = op.method === 'POST' ? RESOURCES[op.path]?.example : undefined;
  return { body: replacement ?? creation ?? EXAMPLES[`${op.method} ${op.path}`] ?? minimal(schema), contentType };
}

/** The smallest instance of a JSON schema: required properties only, lower bounds, first enum values. */
export function minimal(schema: JsonSchema): unknown {
  if ('default' in schema) return schema.default;
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if (Array.isArray(schema.anyOf)) return minimal(schema.anyOf[0]);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const name of schema.required ?? []) out[name] = minimal(schema.properties?.[name] ?? {});
      return out;
    }
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => minimal(schema.items ?? {}));
    case 'string':
      if (schema.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
      if (schema.format === 'date-time') return new Date(Date.now() + 86_400_000).toISOString();
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return false;
    case 'null':
      return null;
    default:
      return {};
  }
}
