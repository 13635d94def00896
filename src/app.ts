import type { FastifyInstance } from 'fastify';
import pkg from '../package.json' with { type: 'json' };
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { Notifier } from './db/notifications.ts';
import { GroupCommit } from './db/group-commit.ts';
import type { Logger } from './logger.ts';
import { Authenticator, registerAuth } from './http/auth.ts';
import { registerConsoleRoutes } from './http/console.ts';
import { registerCors } from './http/cors.ts';
import { registerIdempotency } from './http/idempotency.ts';
import { registerMergePatch } from './http/merge-patch.ts';
import { registerOpenApi } from './http/openapi.ts';
import { Metrics, registerMetricsRoute } from './http/metrics.ts';
import { createServer } from './http/server.ts';
import { createApplicationKeyService } from './features/application-keys/service.ts';
import { registerApplicationKeyRoutes } from './features/application-keys/routes.ts';
import { createApplicationService, type ApplicationService } from './features/applications/service.ts';
import { registerApplicationRoutes } from './features/applications/routes.ts';
import { registerHealthRoutes } from './features/health/routes.ts';
import { createLogService } from './features/logs/service.ts';
import { registerLogRoutes } from './features/logs/routes.ts';
import { registerPermissionRoutes } from './features/permissions/routes.ts';
import { createSessionService } from './features/sessions/service.ts';
import { registerSessionRoutes } from './features/sessions/routes.ts';
import { TenantQuotas } from './features/tenants/quotas.ts';
import { createTenantService } from './features/tenants/service.ts';
import { createEventService } from './features/events/service.ts';
import { createGooglePayDecryptor } from './google-pay/index.ts';
import { createGooglePayService } from './features/google-pay/service.ts';
import { registerGooglePayRoutes } from './features/google-pay/routes.ts';
import { createTokenIntentService } from './features/token-intents/service.ts';
import { registerTokenIntentRoutes } from './features/token-intents/routes.ts';
import { createConnectionService } from './features/connections/service.ts';
import { registerConnectionRoutes } from './features/connections/routes.ts';
import { createTransactionService, SETTLE_JOB } from './features/transactions/service.ts';
import { registerTransactionRoutes } from './features/transactions/routes.ts';
import { registerApprovalPages } from './features/transactions/approval-pages.ts';
import { TestLedger } from './processors/index.ts';
import { createTokenService } from './features/tokens/service.ts';
import { registerTokenRoutes } from './features/tokens/routes.ts';
import { createDetokenizeService } from './features/detokenize/service.ts';
import { registerDetokenizeRoutes } from './features/detokenize/routes.ts';
import { createEnrichmentService } from './features/enrichments/service.ts';
import { registerEnrichmentRoutes } from './features/enrichments/routes.ts';
import { createBankAccountVerifier, type BankAccountVerifier } from './bank-verification/verifier.ts';
import { createWebhookService, DELIVER_JOB } from './features/webhooks/service.ts';
import { registerWebhookRoutes } from './features/webhooks/routes.ts';
import { createProxyService } from './features/proxies/service.ts';
import { registerProxyRoutes } from './features/proxies/routes.ts';
import type { JobHandlers } from './db/jobs.ts';
import { OutboundClient } from './outbound/client.ts';
import { Sandbox } from './sandbox/index.ts';
import { createReactorService, RUN_JOB } from './features/reactors/service.ts';
import { registerReactorRoutes } from './features/reactors/routes.ts';
import { createMailer, createMailService, MAIL_JOB } from './mail/index.ts';
import { loadKeyring } from './vault/keyring.ts';
import { Vault } from './vault/tenant-keys.ts';
import { registerTenantRoutes } from './features/tenants/routes.ts';
import { createThreeDSService, DECOUPLED_JOB } from './features/threeds/service.ts';
import { registerThreeDSRoutes } from './features/threeds/routes.ts';
import { registerThreeDSPages } from './features/threeds/pages.ts';
import { createThreeDSSimulator, type ThreeDSProvider } from './threeds/index.ts';
import { TokenBuckets } from './http/rate-limit.ts';
import { createUserService } from './features/users/service.ts';
import { createMemberService } from './features/members/service.ts';
import { registerMemberRoutes } from './features/members/routes.ts';
import { createInvitationService } from './features/invitations/service.ts';
import { registerInvitationRoutes } from './features/invitations/routes.ts';
import { createAcceptance } from './features/invitations/accept.ts';
import { registerInvitationPages } from './features/invitations/pages.ts';
import { createSigninService } from './features/signin/service.ts';
import { registerSigninRoutes } from './features/signin/routes.ts';

/** Coffer's version, package.json's: the OpenAPI document and the API reference show it. */
export const VERSION: string = pkg.version;

export type Services = ReturnType<typeof createServices>;

/** Providers handed in by code that embeds Coffer, in place of the ones the configuration names. */
export type Providers = {
  bankAccountVerifier?: BankAccountVerifier;
  /** A 3DS provider (docs/3ds.md), made given where Coffer serves the simulated ACS's pages; the simulator otherwise. */
  threeds?: (acsBaseUrl: string) => ThreeDSProvider;
  /** The test processor's books (src/processors/coffer-test/ledger.ts); one per process otherwise. */
  testLedger?: TestLedger;
  /** Runs once a processor call has answered, before the answer is recorded: where a crash would fall (crash tests). */
  afterProcessorCall?: (operation: string, transactionId: string) => void | Promise<void>;
  /** The clock of invitations and sign-in (their expiry), in ms since the epoch; Date.now otherwise (tests move it). */
  clock?: () => number;
};

/** The composition root: every service, wired once per process. */
export function createServices(deps: { config: Config; db: Database; notifier: Notifier; log: Logger; providers?: Providers }) {
  const { config, db, notifier, log } = deps;
  // Metrics exist only when an operator can read them (METRICS_TOKEN); the job kinds are those handled below.
  const metrics = config.metricsToken ? new Metrics({ db, log, jobKinds: () => Object.keys(jobHandlers) }) : undefined;
  // Writes that need no transaction of their own, from concurrent requests, commit together.
  const groupCommit = new GroupCommit(db, { observe: metrics?.observeGroupCommit });
  metrics?.watchGroupCommit(groupCommit);
  const logs = createLogService({ db, groupCommit });
  const vault = new Vault(db, loadKeyring(config.cofferKeys, config.dataDir, log));
  // The one guarded client for every outbound call (webhooks, proxies, reactor fetch); closed by main.
  const outbound = new OutboundClient({
    allowlist: config.outboundAllowlist,
    connections: config.outboundConnections,
    tenantConnections: config.outboundTenantConnections,
  });
  const webhooks = createWebhookService({ db, vault, logs, outbound, maxAttempts: config.webhookMaxAttempts, timeoutMs: config.webhookTimeoutMs });
  const events = createEventService({ db, groupCommit, subscriber: (cte) => webhooks.deliveriesFor(cte) });
  // Keys need "does this application exist?"; applications need keys. The closure breaks the cycle.
  let applications: ApplicationService;
  const keys = createApplicationKeyService({ db, logs, notifier, requireApplication: (p, id) => applications.get(p, id) });
  applications = createApplicationService({ db, logs, keys, notifier, log, cacheSeconds: config.authCacheSeconds });
  const sessions = createSessionService({ db, logs, notifier, ttlSeconds: config.sessionTtlSeconds });
  const users = createUserService({ db });
  const tenants = createTenantService({ db, logs, applications, users });
  const quotas = new TenantQuotas(db, { detokenize_limit: config.detokenizeLimit, token_intent_ttl_hours: config.tokenIntentTtlHours }, config.authCacheSeconds * 1000);
  const tokenIntents = createTokenIntentService({ db, groupCommit, vault, logs, events, quotas, log });
  const googlePay = createGooglePayService({
    decryptor: createGooglePayDecryptor({
      settings: config.googlePay,
      outbound,
      onThreadError: (message) => log.error({ err: message }, 'a Google Pay decryption thread failed; the tokens it held were answered 503'),
    }),
    intents: tokenIntents,
  });
  const tokens = createTokenService({
    db, groupCommit, vault, logs, events, log, intents: tokenIntents,
    audience: async (tenantId, containers) => [...(await applications.tokenGrantees(tenantId)), ...(await sessions.tokenGranteesIn(tenantId, containers))],
    clientCreates: {
      rate: config.publicTokenCreateRate,
      burst: config.publicTokenCreateBurst,
      keyRate: config.publicTokenCreateKeyRate,
      keyBurst: config.publicTokenCreateKeyBurst,
    },
  });
  const detokenize = createDetokenizeService({ tokens, vault, logs, limitFor: async (tenantId) => (await quotas.of(tenantId)).detokenize_limit });
  const enrichments = createEnrichmentService({
    tokens, logs, log,
    verifier: deps.providers?.bankAccountVerifier ?? createBankAccountVerifier(config.bankVerificationProvider),
  });
  const threeds = createThreeDSService({
    db, groupCommit, vault, logs, events, tokens, intents: tokenIntents, log,
    provider: deps.providers?.threeds ?? ((acsBaseUrl) => createThreeDSSimulator({ acsBaseUrl, decoupledDelayMs: config.threedsDecoupledDelayMs })),
    // Read when a URL is made: with PORT 0, main.ts sets it once the server listens.
    publicUrl: () => config.mail.publicUrl,
    ttlMinutes: config.threedsSessionTtlMinutes,
  });
  // Processor calls go through the guarded outbound client; the test processor keeps one set of books per process.
  const connections = createConnectionService({
    db, vault, logs, notifier, cacheSeconds: config.authCacheSeconds,
    processorDeps: { http: (request) => outbound.request(request), testLedger: deps.providers?.testLedger ?? new TestLedger() },
  });
  const transactions = createTransactionService({
    db, groupCommit, logs, events, tokens, intents: tokenIntents, threeds, connections, log,
    publicUrl: () => config.mail.publicUrl,
    approvalMinutes: config.transactionApprovalMinutes,
    resumeAfterMs: config.transactionResumeAfterSeconds * 1000,
    afterCall: deps.providers?.afterProcessorCall,
  });
  const authenticator = new Authenticator(
    // Shared by the concurrent requests of one key (src/http/auth.ts): outside any request's transaction.
    (hash, kind) => db.withoutAmbient(() => (kind === 'application' ? keys.resolve(hash) : sessions.resolve(hash))),
    config.authCacheSeconds,
  );
  notifier.onInvalidate(() => authenticator.invalidate());
  // The one sandbox for user code (reactors, proxy transforms): sandbox processes, runs admitted
  // by tenant, isolates kept warm per tenant and code version. Its observer counts every run.
  const sandbox = new Sandbox({
    maxWarmBytes: config.sandboxWarmMemoryMb * 1024 * 1024,
    onRun: metrics?.observeRun,
    processes: config.sandboxProcesses,
    concurrency: config.sandboxConcurrency,
    tenantConcurrency: config.sandboxTenantConcurrency,
    tenantQueue: config.sandboxTenantQueue,
    slotDepth: config.sandboxSlotDepth,
    hostCallBudgetMs: config.sandboxHostCallBudgetMs,
    tenantHostCalls: config.sandboxTenantHostCalls,
    quarantineMs: config.sandboxQuarantineSeconds * 1000,
    nice: config.sandboxNice,
    log,
  });
  metrics?.watchSandbox(sandbox);
  const reactors = createReactorService({
    db, groupCommit, vault, logs, events, sandbox, outbound, applications, tokens, detokenize, log, notifier, cacheSeconds: config.authCacheSeconds,
    limits: {
      syncTimeoutMs: config.reactorTimeoutMs,
      asyncTimeoutMs: config.reactorAsyncTimeoutMs,
      memoryMb: config.reactorMemoryMb,
      maxTokens: 100,
    },
  });
  // E-mail is queued in the sender's transaction and sent by the MAIL_JOB handler (src/mail).
  const mail = createMailService({ db, vault, mailer: createMailer(config.mail), log, maxAttempts: config.mail.maxAttempts });
  // People: members, invitations by e-mail, member sign-in (docs/people.md).
  const clock = deps.providers?.clock ?? Date.now;
  const publicUrl = () => config.mail.publicUrl;
  const members = createMemberService({ db, logs, events });
  const signin = createSigninService({
    db, logs, mail, members, users, tenants, log, now: clock, publicUrl, linkMinutes: config.signinLinkMinutes, sessionHours: config.memberSessionHours,
  });
  // Proxy transforms share the one sandbox above; signed-in members may invoke proxies too.
  const proxies = createProxyService({
    db, vault, logs, notifier, outbound, sandbox, authenticator, applications, detokenize, tokens,
    members: (session, csrfHeader, csrfCookie) => signin.authenticate(session, csrfHeader, csrfCookie),
    timeoutMs: config.proxyTimeoutMs,
    maxBodyBytes: config.proxyMaxBodyBytes,
    maxDecompressedBytes: config.proxyMaxDecompressedBytes,
    anonymousRate: config.proxyAnonymousRate,
    anonymousBurst: config.proxyAnonymousBurst,
    cacheSeconds: config.authCacheSeconds,
  });
  const invitations = createInvitationService({
    db, logs, events, mail, members, users, tenants, applications, log, now: clock, publicUrl, ttlHours: config.invitationTtlHours,
  });
  const acceptance = createAcceptance({ db, logs, events, users, members, tenants, signin, log, now: clock });
  // Acceptances and sign-in requests per client address: a minute's worth at once, then that rate.
  const peopleLimiter = new TokenBuckets(config.peopleRatePerMinute / 60, config.peopleRatePerMinute);
  // Background work by job kind; main.ts runs these when WORKERS=1. Add a kind here to handle it.
  const jobHandlers: JobHandlers = {
    [DELIVER_JOB]: (job) => webhooks.deliver(job),
    [RUN_JOB]: (job) => reactors.runJob(job),
    [MAIL_JOB]: (job) => mail.deliver(job),
    [DECOUPLED_JOB]: (job) => threeds.completeDecoupled(job),
    [SETTLE_JOB]: (job) => transactions.recovery.settle(job),
  };
  // Webhook deliveries and e-mail wait on their own schedules; other kinds back off exponentially.
  const jobRetrySchedules = { [DELIVER_JOB]: config.webhookRetrySchedule, [MAIL_JOB]: config.mail.retrySchedule };
  return {
    users, members, signin, invitations, acceptance, peopleLimiter, logs, events, vault, outbound, sandbox, keys, applications, sessions, tenants, quotas,
    tokenIntents, googlePay, tokens, detokenize, enrichments, threeds, connections, transactions, webhooks, reactors, proxies, mail, authenticator,
    jobHandlers, jobRetrySchedules, metrics,
  };
}

export async function buildApp(deps: { config: Config; db: Database; log: Logger; services: Services }): Promise<FastifyInstance> {
  const { config, db, log, services } = deps;
  const app = createServer(log);
  // Hooks that see every route must be in place before the routes are added.
  // CORS first: a preflight carries no key, and is answered before anything else looks at it.
  registerCors(app, config.corsOrigins);
  if (services.metrics) {
    services.metrics.instrument(app);
    // With METRICS_PORT the metrics have a listener of their own (main.ts), not a route here.
    if (config.metricsPort === undefined) registerMetricsRoute(app, services.metrics, config.metricsToken!);
  }
  await registerOpenApi(app, VERSION);
  registerAuth(app, services.authenticator, (session, csrfHeader, csrfCookie) => services.signin.authenticate(session, csrfHeader, csrfCookie));
  registerMergePatch(app);
  registerIdempotency(
    app,
    db,
    config.idempotencyTtlHours,
    (tenantId, actorId, key) => services.vault.hmac(tenantId, 'idempotency', `${actorId}\u0000${key}`),
    (principal, shown) => services.tokens.checkReplay(principal, shown),
  );

  registerHealthRoutes(app, db);
  registerPermissionRoutes(app);
  registerTenantRoutes(app, services.tenants, services.quotas);
  registerApplicationRoutes(app, services.applications);
  registerApplicationKeyRoutes(app, services.keys);
  registerSessionRoutes(app, services.sessions);
  registerLogRoutes(app, services.logs);
  registerTokenRoutes(app, services.tokens);
  registerTokenIntentRoutes(app, services.tokenIntents);
  registerGooglePayRoutes(app, services.googlePay);
  // The decryption threads stop with the app (main.ts stops them too, for an app never built).
  app.addHook('onClose', async () => {
    await services.googlePay.close();
  });
  registerDetokenizeRoutes(app, services.detokenize);
  registerEnrichmentRoutes(app, services.enrichments);
  registerThreeDSRoutes(app, services.threeds);
  registerThreeDSPages(app, services.threeds, () => config.mail.publicUrl);
  registerConnectionRoutes(app, services.connections);
  registerTransactionRoutes(app, services.transactions);
  registerApprovalPages(app, services.transactions, () => config.mail.publicUrl);
  registerWebhookRoutes(app, services.webhooks);
  registerMemberRoutes(app, services.members);
  registerInvitationRoutes(app, services.invitations);
  registerInvitationPages(app, { acceptance: services.acceptance, members: services.members, limiter: services.peopleLimiter, publicUrl: () => config.mail.publicUrl });
  registerSigninRoutes(app, { signin: services.signin, limiter: services.peopleLimiter, publicUrl: () => config.mail.publicUrl });
  registerReactorRoutes(app, services.reactors);
  registerProxyRoutes(app, services.proxies, { maxBodyBytes: config.proxyMaxBodyBytes });
  // The Console's static files (console/dist, built by `npm ci`): a page, not part of the API.
  registerConsoleRoutes(app);
  await app.ready();
  return app;
}
