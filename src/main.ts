import type { FastifyInstance } from 'fastify';
import { buildApp, createServices, type Services } from './app.ts';
import type { Config } from './config.ts';
import { Notifier } from './db/notifications.ts';
import { openDatabase, type OpenDatabase } from './db/open.ts';
import type { Logger } from './logger.ts';
import { startSweeper } from './sweeper.ts';

export type Running = {
  app: FastifyInstance;
  services: Services;
  database: OpenDatabase;
  url: string;
  /** The management key of the tenant created on this first start, if one was. */
  firstKey: { tenant_id: string; api_key: string } | undefined;
  stop(): Promise<void>;
};

/** Process entry for `coffer serve`: config → database → app → listen; the sweeper runs in-process. */
export async function start(config: Config, log: Logger): Promise<Running> {
  const database = await openDatabase(config, log, { takeOwnership: true, migrate: true });
  const notifier = new Notifier(database.url, database.db, log);
  let app: FastifyInstance | undefined;
  let stopSweeper = () => {};
  try {
    await notifier.start();
    const services = createServices({ config, db: database.db, notifier, log });
    const first = await services.tenants.initializeIfEmpty('Default');
    app = await buildApp({ config, db: database.db, log, services });
    const url = await app.listen({ port: config.port, host: config.host });
    if (config.workers) stopSweeper = startSweeper(services, database.db, log, config.sweepIntervalSeconds);
    let stopped = false;
    const running: Running = {
      app,
      services,
      database,
      url,
      firstKey: first ? { tenant_id: first.tenant_id, api_key: first.api_key } : undefined,
      async stop() {
        if (stopped) return;
        stopped = true;
        stopSweeper();
        await app!.close();
        await notifier.close();
        await database.close();
      },
    };
    return running;
  } catch (err) {
    stopSweeper();
    await app?.close().catch(() => {});
    await notifier.close();
    await database.close();
    throw err;
  }
}
