import { parseArgs } from 'node:util';
import { createServices } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate } from './db/migrate.ts';
import { Notifier } from './db/notifications.ts';
import { openDatabase } from './db/open.ts';
import { createLogger } from './logger.ts';
import { start } from './main.ts';
import { loadKeyring } from './vault/keyring.ts';
import { Vault } from './vault/tenant-keys.ts';
import { pino } from 'pino';

const USAGE = `Usage: coffer <command> [options]

Commands:
  serve                         start the API (what \`npm start\` runs)
  migrate                       apply database migrations and exit
  init [--tenant-name NAME] [--json]
                                create a tenant with a management application and print its key
  rotate-keys                   re-wrap every tenant data key under the first key of COFFER_KEYS

Settings come from the environment; see docs/configuration.md.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  const config = loadConfig();
  switch (command) {
    case 'serve':
      return serve(config);
    case 'migrate':
      return runMigrate(config);
    case 'init':
      return init(config, rest);
    case 'rotate-keys':
      return rotateKeys(config);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 1 : 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}\n`);
      return 1;
  }
}

async function serve(config: Config): Promise<number> {
  const log = createLogger(config.logLevel);
  const running = await start(config, log);
  if (running.firstKey) {
    // The key goes to the terminal once, never into the log stream.
    process.stderr.write(
      `\nCoffer created tenant ${running.firstKey.tenant_id} on this first start.\n` +
        `Its management API key (shown only now; send it as SVC-API-KEY):\n\n  ${running.firstKey.api_key}\n\n`,
    );
  }
  log.info({ url: running.url, first_start: running.firstKey !== undefined }, 'coffer ready');
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      log.info({ signal }, 'shutting down');
      running.stop().then(resolve, (err) => {
        log.error({ err: (err as Error).message }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
  return 0;
}

/** One-shot commands log to stderr, so stdout carries only their result. */
function cliLogger(config: Config) {
  return createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, pino.destination(2));
}

async function runMigrate(config: Config): Promise<number> {
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: false });
  try {
    const applied = await migrate(database.db.pool, log);
    process.stdout.write(applied.length ? `Applied: ${applied.join(', ')}\n` : 'Database is up to date.\n');
    return 0;
  } finally {
    await database.close();
  }
}

async function init(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { 'tenant-name': { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  const name = values['tenant-name'] ?? 'Default';
  if (name.trim() === '' || name.length > 200) throw new UsageError('--tenant-name must be 1 to 200 characters');
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    const notifier = new Notifier(database.url, database.db, log);
    const services = createServices({ config, db: database.db, notifier, log });
    const created = await services.tenants.initialize(name.trim()).finally(() => {
      services.sandbox.dispose();
      return services.outbound.close();
    });
    if (values.json) process.stdout.write(`${JSON.stringify(created)}\n`);
    else {
      process.stdout.write(
        `Tenant ${created.tenant_id} created with management application ${created.application_id}.\n` +
          `Management API key (shown only now; send it as SVC-API-KEY):\n\n  ${created.api_key}\n`,
      );
    }
    return 0;
  } finally {
    await database.close();
  }
}

/** Online: tokens keep their ciphertext; only the wrapping of each tenant's keys changes. */
async function rotateKeys(config: Config): Promise<number> {
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    const keyring = loadKeyring(config.cofferKeys, config.dataDir, log);
    const count = await new Vault(database.db, keyring).rotate(log);
    process.stdout.write(`Re-wrapped ${count} tenant keys under key "${keyring.currentId}". Keys no longer first in COFFER_KEYS can now be retired.\n`);
    return 0;
  } finally {
    await database.close();
  }
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError || err instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`coffer: ${(err as Error).message}\n`);
    } else {
      process.stderr.write(`coffer: ${(err as Error).message ?? String(err)}\n`);
    }
    process.exitCode = 1;
  },
);
