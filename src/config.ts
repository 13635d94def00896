import path from 'node:path';
import { BANK_VERIFICATION_PROVIDER_NAMES, type BankVerificationProviderName } from './bank-verification/verifier.ts';
import { DEFAULT_EMBEDDED_POSTGRES_DIR } from './db/embedded/location.ts';
import { type GooglePaySettings, readGooglePaySettings } from './google-pay/settings.ts';
import { type MailSettings, readMailSettings } from './mail/settings.ts';
import { emailProblem } from './mail/address.ts';
import { type CorsOrigins, parseOrigin } from './http/cors.ts';
import { allowlistProblems } from './outbound/policy.ts';
import { LocalKeyring, parseKeys } from './vault/keyring.ts';

/** Every setting Coffer reads, parsed once from the environment. See docs/configuration.md. */
export type Config = {
  port: number;
  host: string;
  dataDir: string;
  /** As root, where the embedded PostgreSQL's binaries and clusters go when the `postgres` user cannot reach the checkout or DATA_DIR. */
  embeddedPostgresDir: string;
  databaseUrl: string | undefined;
  databasePoolSize: number;
  /** Statements running longer are cancelled (0: never); migrations are exempt. */
  databaseStatementTimeoutMs: number;
  logLevel: LogLevel;
  /** LOG_FORMAT; unset (undefined), pretty when the log goes to a terminal and JSON otherwise. */
  logFormat: LogFormat | undefined;
  cofferKeys: string | undefined;
  authCacheSeconds: number;
  sessionTtlSeconds: number;
  idempotencyTtlHours: number;
  sweepIntervalSeconds: number;
  workers: boolean;
  outboundAllowlist: string[];
  /** Outbound requests in flight per destination origin (the keep-alive pool's size). */
  outboundConnections: number;
  /** Of those, the most one tenant may have at once. */
  outboundTenantConnections: number;
  detokenizeLimit: number;
  /** How long a token intent lives, unless its tenant's quota says otherwise. */
  tokenIntentTtlHours: number;
  jobPollMs: number;
  jobConcurrency: number;
  jobLeaseSeconds: number;
  jobBackoffBaseMs: number;
  jobBackoffMaxMs: number;
  jobRetentionDays: number;
  jobDeadRetentionDays: number;
  webhookMaxAttempts: number;
  /** Waits before the 2nd, 3rd … delivery attempt of a webhook event, in ms; the last repeats. */
  webhookRetrySchedule: number[];
  webhookTimeoutMs: number;
  proxyTimeoutMs: number;
  proxyMaxBodyBytes: number;
  /** The most a destination's compressed response may decompress to for a response transform. */
  proxyMaxDecompressedBytes: number;
  proxyAnonymousRate: number;
  proxyAnonymousBurst: number;
  /** Tokens a minute each public key (or session key) may create from one client address; 0 turns the limit off. */
  publicTokenCreateRate: number;
  publicTokenCreateBurst: number;
  /** Tokens a minute each public key (or session key) may create from all addresses together; 0 turns the limit off. */
  publicTokenCreateKeyRate: number;
  publicTokenCreateKeyBurst: number;
  reactorTimeoutMs: number;
  reactorAsyncTimeoutMs: number;
  reactorMemoryMb: number;
  /** Runs of user code (reactors and proxy transforms) in progress at once per API process (REACTOR_CONCURRENCY, the older name, still read). */
  sandboxConcurrency: number;
  /** Of them, one tenant's at most; and one tenant's runs waiting for a slot at most. */
  sandboxTenantConcurrency: number;
  sandboxTenantQueue: number;
  /** Runs of one code a slot is sent at once: one running, the rest waiting behind it in the sandbox process. */
  sandboxSlotDepth: number;
  /** Shared sandbox processes that run user code, per API process. */
  sandboxProcesses: number;
  /** A run's budget of wall time with `bt` calls in progress, in ms; and one tenant's `bt` calls in progress at once. */
  sandboxHostCallBudgetMs: number;
  sandboxTenantHostCalls: number;
  /** How long tenants whose runs were in a sandbox process that ended run in processes of their own, in seconds. */
  sandboxQuarantineSeconds: number;
  /** Added to the sandbox processes' nice value. */
  sandboxNice: number;
  /** What the sandbox's idle warm isolates (reactors and proxy transforms) may hold together, in MiB. */
  sandboxWarmMemoryMb: number;
  /** Bearer token for GET /metrics; unset, there are no metrics at all. */
  metricsToken: string | undefined;
  /** Serve /metrics on this port instead of the API port (required with `serve --workers N` > 1). */
  metricsPort: number | undefined;
  /** On SIGTERM/SIGINT, how long requests in flight may run before their connections are closed. */
  shutdownGraceSeconds: number;
  /** Origins whose browser pages may call Coffer: `*` any, a list (normalised), empty: CORS off. */
  corsOrigins: CorsOrigins;
  /** The GOOGLE_PAY_* settings: Coffer's private keys, where Google's root keys come from, the gateway id, test mode. */
  googlePay: GooglePaySettings;
  /** Who answers POST /enrichments/bank-account-verify (src/bank-verification/). */
  bankVerificationProvider: BankVerificationProviderName;
  /** How long a 3DS session lives from its creation (a decoupled challenge's, past its deadline), in minutes. */
  threedsSessionTtlMinutes: number;
  /** How long a buyer has to complete a transaction's approval (3DS) before it fails. */
  transactionApprovalMinutes: number;
  /** A processor call unanswered this long is made again, with the same key, by the sweep. */
  transactionResumeAfterSeconds: number;
  /** How long the 3DS simulator's issuer takes to complete a decoupled challenge, in ms (capped by decoupled_challenge_max_time). */
  threedsDecoupledDelayMs: number;
  /** SMTP_URL, MAIL_FROM, PUBLIC_URL, MAIL_MAX_ATTEMPTS, MAIL_RETRY_SCHEDULE: how e-mail is sent, and the base of its links. */
  mail: MailSettings;
  /** COFFER_OWNER_EMAIL: the e-mail address of the OWNER member the first start (or `coffer init`) makes. */
  ownerEmail: string | undefined;
  /** How long an invitation's link works, from its creation or latest resend. */
  invitationTtlHours: number;
  /** How long a one-time sign-in link works. */
  signinLinkMinutes: number;
  /** How long a member stays signed in. */
  memberSessionHours: number;
  /** Acceptances and sign-in requests a minute from one client address (its burst too). */
  peopleRatePerMinute: number;
};

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
export type LogFormat = 'json' | 'pretty';
const LOG_FORMATS: LogFormat[] = ['json', 'pretty'];

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

type Env = Record<string, string | undefined>;

/** Reads the environment; collects every problem before failing so one run shows them all. */
export function loadConfig(env: Env = process.env): Config {
  const problems: string[] = [];
  const read = new Reader(env, problems);
  const proxyMaxBodyBytes = read.int('PROXY_MAX_BODY_BYTES', 1_048_576, 1024, 104_857_600);
  const outboundConnections = read.int('OUTBOUND_CONNECTIONS', 64, 1, 10_000);
  const port = read.int('PORT', 8080, 0, 65535);
  const host = read.string('HOST', '127.0.0.1');
  const dataDir = path.resolve(read.string('DATA_DIR', './data'));

  const config: Config = {
    port,
    host,
    dataDir,
    embeddedPostgresDir: path.resolve(read.string('EMBEDDED_POSTGRES_DIR', DEFAULT_EMBEDDED_POSTGRES_DIR)),
    databaseUrl: read.databaseUrl('DATABASE_URL'),
    databasePoolSize: read.int('DATABASE_POOL_SIZE', 20, 1, 500),
    databaseStatementTimeoutMs: read.int('DATABASE_STATEMENT_TIMEOUT_MS', 30_000, 0, 3_600_000),
    logLevel: read.oneOf('LOG_LEVEL', 'info', LOG_LEVELS),
    logFormat: read.optional('LOG_FORMAT') === undefined
      ? undefined
      : read.oneOf('LOG_FORMAT', 'json', LOG_FORMATS, 'json for JSON lines, pretty for one readable line each; unset, pretty on a terminal and JSON otherwise'),
    cofferKeys: read.keyring('COFFER_KEYS'),
    authCacheSeconds: read.int('AUTH_CACHE_SECONDS', 5, 0, 300),
    sessionTtlSeconds: read.int('SESSION_TTL_SECONDS', 180, 1, 86_400),
    idempotencyTtlHours: read.int('IDEMPOTENCY_TTL_HOURS', 24, 1, 720),
    sweepIntervalSeconds: read.int('SWEEP_INTERVAL_SECONDS', 30, 1, 86_400),
    workers: read.oneOf('WORKERS', '1', ['0', '1'], 'it switches background jobs on or off; the number of server processes is `coffer serve --workers N`') === '1',
    outboundAllowlist: read.allowlist('OUTBOUND_ALLOWLIST'),
    outboundConnections,
    // Unset, a quarter of them: one tenant's slow destination leaves three quarters to the others.
    outboundTenantConnections: read.int('OUTBOUND_TENANT_CONNECTIONS', Math.max(1, Math.floor(outboundConnections / 2)), 1, 10_000),
    detokenizeLimit: read.int('DETOKENIZE_LIMIT', 100, 1, 10_000),
    tokenIntentTtlHours: read.int('TOKEN_INTENT_TTL_HOURS', 24, 1, 48),
    reactorTimeoutMs: read.int('REACTOR_TIMEOUT_MS', 30_000, 100, 300_000),
    reactorAsyncTimeoutMs: read.int('REACTOR_ASYNC_TIMEOUT_MS', 300_000, 100, 3_600_000),
    reactorMemoryMb: read.int('REACTOR_MEMORY_MB', 128, 8, 4096),
    sandboxConcurrency: read.int('SANDBOX_CONCURRENCY', read.int('REACTOR_CONCURRENCY', 8, 1, 1000), 1, 1000),
    sandboxTenantConcurrency: 0,
    sandboxTenantQueue: 0,
    sandboxSlotDepth: read.int('SANDBOX_SLOT_DEPTH', 8, 1, 1000),
    sandboxProcesses: read.int('SANDBOX_PROCESSES', 1, 1, 64),
    sandboxHostCallBudgetMs: read.int('SANDBOX_HOST_CALL_BUDGET_MS', 10_000, 1, 3_600_000),
    sandboxTenantHostCalls: read.int('SANDBOX_TENANT_HOST_CALLS', 8, 1, 1000),
    sandboxQuarantineSeconds: read.int('SANDBOX_QUARANTINE_SECONDS', 600, 0, 86_400),
    sandboxNice: read.int('SANDBOX_NICE', 10, 0, 19),
    sandboxWarmMemoryMb: read.int('SANDBOX_WARM_MEMORY_MB', 512, 0, 1_048_576),
    jobPollMs: read.int('JOB_POLL_MS', 500, 10, 60_000),
    jobConcurrency: read.int('JOB_CONCURRENCY', 10, 1, 1000),
    jobLeaseSeconds: read.int('JOB_LEASE_SECONDS', 60, 1, 3600),
    jobBackoffBaseMs: read.int('JOB_BACKOFF_BASE_MS', 1000, 1, 3_600_000),
    jobBackoffMaxMs: read.int('JOB_BACKOFF_MAX_MS', 3_600_000, 1, 86_400_000),
    jobRetentionDays: read.int('JOB_RETENTION_DAYS', 7, 1, 3650),
    jobDeadRetentionDays: read.int('JOB_DEAD_RETENTION_DAYS', 30, 1, 3650),
    webhookMaxAttempts: read.int('WEBHOOK_MAX_ATTEMPTS', 8, 1, 50),
    webhookRetrySchedule: read.durations('WEBHOOK_RETRY_SCHEDULE', DEFAULT_WEBHOOK_RETRY_SCHEDULE, 1, 86_400_000),
    webhookTimeoutMs: read.int('WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
    proxyTimeoutMs: read.int('PROXY_TIMEOUT_MS', 25_000, 100, 300_000),
    proxyMaxBodyBytes,
    // Unset, the same as PROXY_MAX_BODY_BYTES: what a response transform reads, before and after decompression.
    proxyMaxDecompressedBytes: read.int('PROXY_MAX_DECOMPRESSED_BYTES', proxyMaxBodyBytes, 1024, 104_857_600),
    proxyAnonymousRate: read.int('PROXY_ANONYMOUS_RATE', 20, 0, 100_000),
    proxyAnonymousBurst: read.int('PROXY_ANONYMOUS_BURST', 40, 1, 1_000_000),
    publicTokenCreateRate: read.int('PUBLIC_TOKEN_CREATE_RATE', 60, 0, 1_000_000),
    publicTokenCreateBurst: read.int('PUBLIC_TOKEN_CREATE_BURST', 30, 1, 1_000_000),
    publicTokenCreateKeyRate: read.int('PUBLIC_TOKEN_CREATE_KEY_RATE', 6000, 0, 10_000_000),
    publicTokenCreateKeyBurst: read.int('PUBLIC_TOKEN_CREATE_KEY_BURST', 1000, 1, 10_000_000),
    metricsToken: read.secret('METRICS_TOKEN', 16),
    metricsPort: read.optionalInt('METRICS_PORT', 0, 65535),
    shutdownGraceSeconds: read.int('SHUTDOWN_GRACE_SECONDS', 20, 0, 600),
    corsOrigins: read.origins('CORS_ORIGINS'),
    googlePay: readGooglePaySettings((name) => read.optional(name), problems),
    bankVerificationProvider: read.oneOf('BANK_VERIFICATION_PROVIDER', 'test', BANK_VERIFICATION_PROVIDER_NAMES),
    threedsSessionTtlMinutes: read.int('THREEDS_SESSION_TTL_MINUTES', 30, 1, 1440),
    transactionApprovalMinutes: read.int('TRANSACTION_APPROVAL_MINUTES', 15, 1, 1440),
    transactionResumeAfterSeconds: read.int('TRANSACTION_RESUME_AFTER_SECONDS', 120, 1, 86_400),
    threedsDecoupledDelayMs: read.int('THREEDS_DECOUPLED_DELAY_MS', 5000, 0, 604_800_000),
    mail: readMailSettings((name) => read.optional(name), problems, {
      host,
      port,
      dataDir,
      maxAttempts: read.int('MAIL_MAX_ATTEMPTS', 6, 1, 50),
      retrySchedule: read.durations('MAIL_RETRY_SCHEDULE', DEFAULT_MAIL_RETRY_SCHEDULE, 1, 86_400_000),
    }),
    ownerEmail: readOwnerEmail(read.optional('COFFER_OWNER_EMAIL'), problems),
    invitationTtlHours: read.int('INVITATION_TTL_HOURS', 72, 1, 720),
    signinLinkMinutes: read.int('SIGNIN_LINK_MINUTES', 15, 1, 1440),
    memberSessionHours: read.int('MEMBER_SESSION_HOURS', 12, 1, 720),
    peopleRatePerMinute: read.int('PEOPLE_RATE_PER_MINUTE', 10, 1, 100_000),
  };
  // Half the slots by default: a tenant that keeps its share busy leaves the other half to the rest.
  config.sandboxTenantConcurrency = read.int('SANDBOX_TENANT_CONCURRENCY', Math.ceil(config.sandboxConcurrency / 2), 1, config.sandboxConcurrency);
  // Ten times the slots, as the one queue all tenants shared before: one tenant alone keeps that backlog.
  config.sandboxTenantQueue = read.int('SANDBOX_TENANT_QUEUE', config.sandboxConcurrency * 10, 0, 100_000);
  if (config.outboundTenantConnections > config.outboundConnections) {
    problems.push(
      `OUTBOUND_TENANT_CONNECTIONS (${config.outboundTenantConnections}) must not be more than OUTBOUND_CONNECTIONS (${config.outboundConnections}): it is a tenant's share of them`,
    );
  }
  if (config.metricsPort !== undefined && read.optional('METRICS_TOKEN') === undefined) {
    problems.push('METRICS_PORT is set but METRICS_TOKEN is not: metrics are served only with a token');
  }
  // Else the metrics listener fails with EADDRINUSE on a port the API has just taken, which reads like another program's fault.
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    problems.push(`METRICS_PORT must differ from PORT (both are ${config.port}); leave METRICS_PORT unset to serve /metrics on the API port`);
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * The waits between webhook delivery attempts: the Standard Webhooks reference schedule, about
 * 27 hours over 8 attempts, so an endpoint down for a deploy or a night's outage still gets
 * its events.
 */
const DEFAULT_WEBHOOK_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,10h';

/** Waits between attempts to send an e-mail: 6 attempts over about 50 minutes, the first four within a sign-in link's 15. */
const DEFAULT_MAIL_RETRY_SCHEDULE = '10s,1m,4m,15m,30m';

const DURATION_UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** NaN stands for a part that is not a duration. */
function parseDurations(list: string): number[] {
  return list.split(',').map((part) => {
    const m = /^(\d+)(ms|s|m|h)$/.exec(part.trim());
    return m ? Number(m[1]) * DURATION_UNITS_MS[m[2]] : Number.NaN;
  });
}

class Reader {
  private readonly env: Env;
  private readonly problems: string[];
  constructor(env: Env, problems: string[]) {
    this.env = env;
    this.problems = problems;
  }

  optional(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  }

  string(name: string, fallback: string): string {
    return this.optional(name) ?? fallback;
  }

  /** A secret compared against what callers send: long enough that guessing it is hopeless. */
  secret(name: string, minLength: number): string | undefined {
    const raw = this.optional(name);
    if (raw !== undefined && (raw.length < minLength || !/^[\x21-\x7e]+$/.test(raw))) {
      this.problems.push(`${name} must be at least ${minLength} visible ASCII characters without spaces (e.g. \`openssl rand -hex 32\`)`);
      return undefined;
    }
    return raw;
  }

  optionalInt(name: string, min: number, max: number): number | undefined {
    return this.optional(name) === undefined ? undefined : this.int(name, min, min, max);
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    const value = Number(raw);
    if (!/^\d+$/.test(raw) || value < min || value > max) {
      this.problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return value;
  }

  oneOf<T extends string>(name: string, fallback: T, allowed: readonly T[], hint?: string): T {
    const raw = this.optional(name);
    if (raw === undefined) return fallback;
    if (!allowed.includes(raw as T)) {
      this.problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")${hint ? `: ${hint}` : ''}`);
      return fallback;
    }
    return raw as T;
  }

  list(name: string): string[] {
    const raw = this.optional(name);
    return raw === undefined ? [] : raw.split(',').map((s) => s.trim()).filter(Boolean);
  }

  /** Hosts, IPs and CIDRs; a malformed entry is reported here, before any database is started. */
  allowlist(name: string): string[] {
    const entries = this.list(name);
    this.problems.push(...allowlistProblems(entries));
    return entries;
  }

  /**
   * `*` (also when unset), or comma-separated origins, normalised (`HTTPS://Shop.example:443` →
   * `https://shop.example`) so that a browser's `Origin` matches exactly. Set but empty turns CORS
   * off: unlike the other settings, empty is not the default here.
   */
  origins(name: string): CorsOrigins {
    const raw = this.env[name];
    if (raw === undefined) return '*';
    const entries = raw.split(',').map((s) => s.trim()).filter(Boolean);
    if (entries.length === 1 && entries[0] === '*') return '*';
    const origins = new Set<string>();
    for (const entry of entries) {
      const origin = entry === '*' ? undefined : parseOrigin(entry);
      if (origin !== undefined) origins.add(origin);
      else if (entry === '*') this.problems.push(`${name}: * allows every origin and cannot be combined with a list of origins`);
      else {
        this.problems.push(
          `${name} entry "${entry}" is not an origin: http:// or https://, a host and an optional port, with no path, query, fragment, credentials or wildcard (e.g. https://shop.example)`,
        );
      }
    }
    return [...origins];
  }

  /**
   * `id:base64key[,…]`, checked here so a malformed keyring is reported with the other problems,
   * before any database is started. Messages name key ids, never keys.
   */
  keyring(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    try {
      new LocalKeyring(parseKeys(raw));
    } catch (err) {
      const message = (err as Error).message;
      this.problems.push(message.startsWith(name) ? message : `${name}: ${message}`);
      return undefined;
    }
    return raw;
  }

  /** A comma-separated list of durations such as `5s,5m,2h` (units ms, s, m, h), in ms, each from min to max. */
  durations(name: string, fallback: string, min: number, max: number): number[] {
    const raw = this.optional(name);
    const values = parseDurations(raw ?? fallback);
    if (raw !== undefined && (values.length > 100 || values.some((v) => !(v >= min && v <= max)))) {
      this.problems.push(`${name} must be a comma-separated list of up to 100 durations such as 5s,5m,2h (units ms, s, m, h), each from ${min} ms to ${max / 3_600_000} h (got "${raw}")`);
      return parseDurations(fallback);
    }
    return values;
  }

  databaseUrl(name: string): string | undefined {
    const raw = this.optional(name);
    if (raw === undefined) return undefined;
    try {
      const url = new URL(raw);
      if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error('protocol');
      return raw;
    } catch {
      this.problems.push(`${name} must be a postgres:// or postgresql:// URL`);
      return undefined;
    }
  }
}

/** COFFER_OWNER_EMAIL: one address (RFC 5322 addr-spec), or unset. */
function readOwnerEmail(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const problem = emailProblem(raw.trim());
  if (problem) problems.push(`COFFER_OWNER_EMAIL ${problem} (got "${raw.slice(0, 200)}")`);
  return problem ? undefined : raw.trim();
}
