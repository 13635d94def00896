import cluster from 'node:cluster';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { announceFirstKey, parseWorkerCount, runPrimary, runWorker, untilSignal } from './cluster.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { migrate } from './db/migrate.ts';
import { openDatabase } from './db/open.ts';
import { processLogger } from './logger.ts';
import { loadKeyring } from './vault/keyring.ts';
import { Vault } from './vault/tenant-keys.ts';
import { QUOTA_NAMES, QUOTA_RANGES, type QuotaName } from './features/tenants/quotas.ts';
import { setTenantSetting } from './features/tenants/store.ts';
import { emailProblem } from './mail/address.ts';
import { generateRecipientKeyPair, recipientPublicKey } from './google-pay/keys.ts';
import { pino } from 'pino';

const USAGE = `Usage: coffer <command> [options]

Commands:
  serve [--workers N]           start the API (what \`npm start\` runs); with N > 1, N worker
                                processes share the port (node:cluster), see docs/operations.md
  migrate                       apply database migrations and exit
  init [--tenant-name NAME] [--owner-email EMAIL] [--json]
                                create a tenant with its OWNER member (EMAIL, or COFFER_OWNER_EMAIL) and a
                                management application, and print its key and a sign-in link for the owner
  signin-link --email EMAIL [--tenant-id ID]
                                print a one-time sign-in link for a member (SIGNIN_LINK_MINUTES), see docs/people.md
  rotate-keys                   re-wrap every tenant key under the first key of COFFER_KEYS (or DATA_DIR/keys)
  quota TENANT_ID NAME VALUE    set one tenant's quota (detokenize_limit, token_intent_ttl_hours) to VALUE, or back
                                to the process default with VALUE "default"
  google-pay keygen [--json]    print a new Google Pay key pair: the private key for
                                GOOGLE_PAY_PRIVATE_KEYS, the public key to register with Google
  google-pay public-keys        print the public key of each key in GOOGLE_PAY_PRIVATE_KEYS

Settings come from the environment; see docs/configuration.md.`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Read only for a command that runs: help and a mistyped command need no valid settings.
  const config = () => loadConfig();
  switch (command) {
    case 'serve':
      return serve(config(), rest);
    case 'migrate':
      noOptions(rest);
      return runMigrate(config());
    case 'init':
      return init(config(), rest);
    case 'signin-link':
      return signinLink(config(), rest);
    case 'rotate-keys':
      noOptions(rest);
      return rotateKeys(config());
    case 'quota':
      return setQuota(config(), rest);
    case 'google-pay':
      return googlePay(rest, config);
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      // Asked for, help is the result (stdout, 0); without a command it is an error message (stderr, 1).
      if (command === undefined) {
        process.stderr.write(`${USAGE}\n`);
        return 1;
      }
      process.stdout.write(`${USAGE}\n`);
      return 0;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}\n`);
      return 1;
  }
}

/** A mistyped option must not be ignored: `migrate --dry-run` would migrate. */
function noOptions(args: string[]): void {
  parseArgs({ args, options: {}, strict: true });
}

async function serve(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { workers: { type: 'string' } }, strict: true });
  const workers = parseWorkerCount(values.workers);
  // A worker is given the primary's format (LOG_FORMAT in its environment), so all of a cluster's lines look alike.
  const { log, format } = processLogger(config.logLevel, config.logFormat, 1);
  // A worker re-runs this command line (node:cluster forks the same script); the primary serves no API.
  if (cluster.isWorker) return runWorker(config, log);
  if (workers > 1) return runPrimary(config, log, workers, format);
  // Imported here, not above: a cluster's primary serves no API and need not load it.
  const { start } = await import('./main.ts');
  const running = await start(config, log, { announceFirstKey });
  const signal = untilSignal(); // before this, a signal stops a start that may be stuck (database unreachable)
  ignoreEchoes();
  log.info({ url: running.url, first_start: running.firstKey !== undefined }, 'coffer ready');
  log.info({ signal: await signal }, 'shutting down');
  try {
    await running.stop();
  } catch (err) {
    log.error({ err: (err as Error).message }, 'shutdown failed');
  }
  return 0;
}

/**
 * Under `npm start`, one Ctrl-C reaches Coffer twice at once: from the terminal, which signals
 * the whole process group, and from npm, which forwards the signals it gets to its script
 * (so that a SIGTERM sent to npm alone stops Coffer too); a service manager signalling the
 * whole group does the same with SIGTERM. A repeat within ECHO_MS of the first signal is that
 * copy and is ignored; a later one ends the process at once, as the signal would by default,
 * so a second Ctrl-C still does. The listener stays from the start: had the signal's last
 * listener gone, even for a moment, Node would restore the default action, and a copy
 * arriving then would end the process mid-shutdown.
 */
const ECHO_MS = 500;
function ignoreEchoes(): void {
  let first = 0;
  for (const name of ['SIGINT', 'SIGTERM'] as const) {
    process.on(name, () => {
      if (first === 0) first = Date.now();
      else if (Date.now() - first >= ECHO_MS) {
        process.removeAllListeners(name);
        process.kill(process.pid, name);
      }
    });
  }
}

/** One-shot commands log to stderr, so stdout carries only their result; pretty when stderr is a terminal. */
function cliLogger(config: Config) {
  return processLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, config.logFormat, 2).log;
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
  const { values } = parseArgs({ args, options: { 'tenant-name': { type: 'string' }, 'owner-email': { type: 'string' }, json: { type: 'boolean' } }, strict: true });
  const name = values['tenant-name'] ?? 'Default';
  if (name.trim() === '' || name.length > 200) throw new UsageError('--tenant-name must be 1 to 200 characters');
  const ownerEmail = values['owner-email']?.trim() ?? config.ownerEmail;
  const emailWrong = ownerEmail === undefined ? undefined : emailProblem(ownerEmail);
  if (emailWrong) throw new UsageError(`--owner-email ${emailWrong}`);
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    const [{ Notifier }, { createServices }] = await Promise.all([import('./db/notifications.ts'), import('./app.ts')]);
    const notifier = new Notifier(database.url, database.db, log);
    const services = createServices({ config, db: database.db, notifier, log });
    const made = await database.db.transaction(async () => {
      const created = await services.tenants.initialize(name.trim(), { ownerEmail });
      const link = await services.signin.issueLink(created.owner_user_id, created.tenant_id);
      return { ...created, signin_url: services.signin.linkUrl(link.token) };
    }).finally(() => Promise.all([services.sandbox.dispose(), services.outbound.close()]));
    if (values.json) process.stdout.write(`${JSON.stringify(made)}\n`);
    else {
      process.stdout.write(
        `Tenant ${made.tenant_id} created with management application ${made.application_id}.\n` +
          `Management API key (shown only now; send it as SVC-API-KEY):\n\n  ${made.api_key}\n\n` +
          `The owner's sign-in link (works once, for ${config.signinLinkMinutes} minutes; \`coffer signin-link\` makes another):\n\n  ${made.signin_url}\n`,
      );
    }
    return 0;
  } finally {
    await database.close();
  }
}

/** `signin-link --email E`: a one-time sign-in link for a member, for an operator to hand over. */
async function signinLink(config: Config, args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { email: { type: 'string' }, 'tenant-id': { type: 'string' } }, strict: true });
  const email = values.email?.trim();
  if (!email) throw new UsageError('signin-link needs --email EMAIL');
  const emailWrong = emailProblem(email);
  if (emailWrong) throw new UsageError(`--email ${emailWrong}`);
  const tenantId = values['tenant-id']?.toLowerCase();
  if (tenantId !== undefined && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(tenantId)) throw new UsageError('--tenant-id must be a tenant id (a UUID)');
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    const [{ Notifier }, { createServices }] = await Promise.all([import('./db/notifications.ts'), import('./app.ts')]);
    const services = createServices({ config, db: database.db, notifier: new Notifier(database.url, database.db, log), log });
    try {
      const user = await services.users.byEmail(email);
      const memberships = user ? await services.members.memberships(user.id) : [];
      const membership = tenantId ? memberships.find((m) => m.tenant_id === tenantId) : memberships[0];
      if (!user || !membership) throw new UsageError(`${email} is not a member of ${tenantId ? `tenant ${tenantId}` : 'any tenant'}`);
      const link = await services.signin.issueLink(user.id, membership.tenant_id);
      process.stdout.write(`Sign-in link for ${email} to tenant ${membership.tenant_name} (works once, for ${config.signinLinkMinutes} minutes):\n\n  ${services.signin.linkUrl(link.token)}\n`);
      return 0;
    } finally {
      await Promise.all([services.sandbox.dispose(), services.outbound.close()]);
    }
  } finally {
    await database.close();
  }
}

/** Online: tokens keep their ciphertext; only the wrapping of each tenant's keys changes. */
async function rotateKeys(config: Config): Promise<number> {
  const log = cliLogger(config);
  // Rotating to a key file made up on the spot would leave a stray KEK nobody backed up. Read
  // first: without a keyring there is nothing to do, and no database to start or migrate.
  const keyring = loadKeyring(config.cofferKeys, config.dataDir, log, { create: false });
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    const count = await new Vault(database.db, keyring).rotate(log);
    const source = config.cofferKeys ? 'COFFER_KEYS' : `the key file ${path.join(config.dataDir, 'keys')}`;
    process.stdout.write(`Re-wrapped ${count} tenant keys under key "${keyring.currentId}". Keys no longer first in ${source} can now be retired.\n`);
    return 0;
  } finally {
    await database.close();
  }
}

/** `quota TENANT_ID NAME VALUE`: an operator's override of one tenant's quota, in its settings. */
async function setQuota(config: Config, args: string[]): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const [tenantId, name, raw] = positionals;
  if (positionals.length !== 3) throw new UsageError('quota takes TENANT_ID NAME VALUE, e.g. `coffer quota 0194… detokenize_limit 250`');
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(tenantId)) throw new UsageError(`"${tenantId}" is not a tenant id (a UUID)`);
  if (!(QUOTA_NAMES as readonly string[]).includes(name)) throw new UsageError(`unknown quota "${name}" (quotas: ${QUOTA_NAMES.join(', ')})`);
  const { min, max } = QUOTA_RANGES[name as QuotaName];
  const value = raw === 'default' ? null : /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (value !== null && !(value >= min && value <= max)) throw new UsageError(`${name} must be a whole number from ${min} to ${max}, or "default"`);
  const log = cliLogger(config);
  const database = await openDatabase(config, log, { takeOwnership: false, migrate: true });
  try {
    if (!(await setTenantSetting(database.db, tenantId.toLowerCase(), name, value))) throw new UsageError(`no tenant ${tenantId}`);
    const defaults: Record<QuotaName, string> = {
      detokenize_limit: `${config.detokenizeLimit}, DETOKENIZE_LIMIT`,
      token_intent_ttl_hours: `${config.tokenIntentTtlHours}, TOKEN_INTENT_TTL_HOURS`,
    };
    const shown = value === null ? `the default (${defaults[name as QuotaName]})` : String(value);
    process.stdout.write(`${name} of tenant ${tenantId.toLowerCase()} is now ${shown}; running processes apply it within their AUTH_CACHE_SECONDS.\n`);
    return 0;
  } finally {
    await database.close();
  }
}

/** `google-pay keygen` makes a key pair (no settings needed); `google-pay public-keys` shows the configured keys' public halves. */
function googlePay(args: string[], config: () => Config): number {
  const [sub, ...rest] = args;
  if (sub === 'keygen') {
    const { values } = parseArgs({ args: rest, options: { json: { type: 'boolean' } }, strict: true });
    const pair = generateRecipientKeyPair();
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ private_key: pair.privateKey, public_key: pair.publicKey, public_key_spki: pair.publicKeySpki })}\n`);
    } else {
      process.stdout.write(
        'A new Google Pay recipient key pair (P-256).\n\n' +
          'Private key (PKCS#8, base64): add it to GOOGLE_PAY_PRIVATE_KEYS and keep it secret; it is shown only now.\n\n' +
          `  ${pair.privateKey}\n\n` +
          'Public key (uncompressed point, base64): register it with Google for your gateway, as the console asks.\n\n' +
          `  ${pair.publicKey}\n\n` +
          `The same public key as X.509 SubjectPublicKeyInfo, for tools that want that form:\n\n  ${pair.publicKeySpki}\n`,
      );
    }
    return 0;
  }
  if (sub === 'public-keys') {
    noOptions(rest);
    const keys = config().googlePay.privateKeys;
    if (keys.length === 0) throw new UsageError('GOOGLE_PAY_PRIVATE_KEYS is not set: there are no Google Pay keys (`coffer google-pay keygen` makes one)');
    process.stdout.write(keys.map((key, i) => `${i + 1}. ${recipientPublicKey(key)}\n`).join(''));
    return 0;
  }
  throw new UsageError(sub === undefined ? 'google-pay takes keygen or public-keys' : `unknown google-pay command "${sub}" (commands: keygen, public-keys)`);
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
).finally(() => {
  // Everything is stopped by now: exit at once rather than wait for the event loop to drain.
  // A cluster worker's IPC channel would keep it alive; and in the teardown of a process that
  // ends on its own, V8's last garbage collection finalizes isolated-vm handles after Node's
  // environment is gone, which can abort the process (an assertion in isolated-vm) after a
  // clean shutdown. Output is written synchronously (stdout, stderr and the logs), so none is lost.
  process.exit();
});
