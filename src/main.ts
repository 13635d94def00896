import type { FastifyInstance } from 'fastify';
import { buildApp, createServices, type Providers, type Services } from './app.ts';
import type { Config } from './config.ts';
import { listenMetrics, type MetricsListener } from './http/metrics.ts';
import { Notifier } from './db/notifications.ts';
import { JobRunner } from './db/jobs.ts';
import { openDatabase, type OpenDatabase } from './db/open.ts';
import type { Logger } from './logger.ts';
import { logMailSetup } from './mail/index.ts';
import { startSweeper } from './sweeper.ts';

export type Running = {
  app: FastifyInstance;
  services: Services;
  database: OpenDatabase;
  url: string;
  /** Where /metrics is served when it has a listener of its own (METRICS_PORT). */
  metricsUrl: string | undefined;
  /** The management key of the tenant created on this first start, if one was, and a sign-in link for its owner. */
  firstKey: { tenant_id: string; api_key: string; signin_url: string } | undefined;
  stop(): Promise<void>;
};

export type StartOptions = {
  /** A `serve --workers N` worker: its metrics go to the cluster primary, which serves them for all workers. */
  clusterWorker?: boolean;
  /** Shows the first start's management key and the owner's sign-in link, before the tenant is committed. */
  announceFirstKey?: (created: { tenant_id: string; api_key: string; signin_url: string }) => void;
  /** Providers in place of the configured ones (a bank account verifier of one's own, see docs/payment-methods.md). */
  providers?: Providers;
};

/** Process entry for `coffer serve`: config → database → app → listen; sweeper and job runner run in-process. */
export async function start(config: Config, log: Logger, opts: StartOptions = {}): Promise<Running> {
  const database = await openDatabase(config, log, { takeOwnership: true, migrate: true });
  const notifier = new Notifier(database.url, database.db, log);
  let app: FastifyInstance | undefined;
  let stopSweeper = () => {};
  let services: Services | undefined;
  let jobs: JobRunner | undefined;
  let metricsListener: MetricsListener | undefined;
  try {
    await notifier.start();
    services = createServices({ config, db: database.db, notifier, log, providers: opts.providers });
    logMailSetup(log, services.mail.mailer);
    // A KEK missing from COFFER_KEYS (or a wrong key under its id) stops the start, naming it,
    // instead of every request of the tenants it wraps failing with a 500.
    await services.vault.checkKeyring();
    const signin = services.signin;
    let ownerLink: string | undefined;
    const first = await services.tenants.initializeIfEmpty('Default', async (created) => {
      // In the tenant's transaction: the link exists exactly when the tenant does.
      ownerLink = (await signin.issueLink(created.owner_user_id, created.tenant_id)).token;
      opts.announceFirstKey?.({ tenant_id: created.tenant_id, api_key: created.api_key, signin_url: signin.linkUrl(ownerLink) });
    }, { ownerEmail: config.ownerEmail });
    app = await buildApp({ config, db: database.db, log, services });
    // Node's own message ("listen EADDRINUSE …", "getaddrinfo ENOTFOUND …") does not say which settings to change.
    const url = await app.listen({ port: config.port, host: config.host }).catch((err: Error) => {
      throw new Error(`cannot listen on HOST ${config.host}, PORT ${config.port}: ${err.message}`);
    });
    // PORT 0 (a port chosen at start) leaves the default PUBLIC_URL without a port: it is the address listened on.
    if (new URL(config.mail.publicUrl).port === '0') config.mail.publicUrl = url;
    // Once listening, the server emits 'error' when accepting a connection fails (out of file
    // descriptors or memory): with no listener that would end the process for every tenant.
    app.server.on('error', (err) => log.error({ err: err.message }, 'a connection could not be accepted'));
    const metrics = services.metrics;
    if (metrics && opts.clusterWorker) metrics.answerPrimary();
    else if (metrics && config.metricsPort !== undefined) {
      metricsListener = await listenMetrics({ host: config.host, port: config.metricsPort, token: config.metricsToken!, log, render: () => metrics.render() });
    }
    if (config.workers) {
      stopSweeper = startSweeper(services, database.db, log, config);
      jobs = new JobRunner(database.db, services.jobHandlers, {
        log,
        pollMs: config.jobPollMs,
        concurrency: config.jobConcurrency,
        leaseMs: config.jobLeaseSeconds * 1000,
        backoffBaseMs: config.jobBackoffBaseMs,
        backoffMaxMs: config.jobBackoffMaxMs,
        retrySchedules: services.jobRetrySchedules,
      });
      jobs.start();
    }
    let stopped = false;
    const running: Running = {
      app,
      services,
      database,
      url,
      metricsUrl: metricsListener?.url,
      // Made again now that the server listens: with PORT 0 the port is known only now.
      firstKey: first ? { tenant_id: first.tenant_id, api_key: first.api_key, signin_url: signin.linkUrl(ownerLink!) } : undefined,
      async stop() {
        if (stopped) return;
        stopped = true;
        stopSweeper();
        // Requests in flight may finish, but only for so long: one slow or stalled client
        // (a body trickling in, a response nobody reads) must not keep the process from exiting.
        const cutOff = setTimeout(() => {
          log.warn({ grace_seconds: config.shutdownGraceSeconds }, 'requests still in flight after SHUTDOWN_GRACE_SECONDS; closing their connections');
          app!.server.closeAllConnections();
        }, config.shutdownGraceSeconds * 1000);
        const closed = app!.close().finally(() => clearTimeout(cutOff));
        // Running jobs finish (bounded) while the database is still open; unfinished ones are retried after their lease.
        await Promise.all([jobs?.stop(), closed, metricsListener?.close()]);
        await services!.outbound.close();
        await services!.mail.close();
        await services!.googlePay.close();
        await services!.sandbox.dispose();
        // The seals counted since the last report, while the database is still open.
        await services!.vault.close().catch((err: Error) => log.warn({ err: err.message }, 'could not report data key usage'));
        await notifier.close();
        await database.close();
      },
    };
    return running;
  } catch (err) {
    stopSweeper();
    await jobs?.stop();
    await app?.close().catch(() => {});
    await metricsListener?.close();
    await services?.outbound.close().catch(() => {});
    await services?.mail.close().catch(() => {});
    await services?.googlePay.close().catch(() => {});
    await services?.sandbox.dispose();
    await notifier.close();
    await database.close();
    throw err;
  }
}
