/**
 * The processors a connection can name, and how one is built from the connection's settings and
 * (decrypted) credentials. The connections feature validates a connection with
 * `checkConnectionConfig` at create/update, and the transactions feature calls `createProcessor`
 * per call; neither needs to know a connector's options. docs/orchestration.md ("Processors")
 * says how to add one.
 */
import type { TestLedger } from './coffer-test/ledger.ts';
import { CofferTestProcessor, COFFER_TEST, DEFAULT_SETTLE_DELAY_MS } from './coffer-test/processor.ts';
import type { Processor, ProcessorHttp } from './processor.ts';
import { STRIPE, STRIPE_API_VERSION, STRIPE_DEFAULT_BASE_URL, StripeProcessor } from './stripe/processor.ts';

export type { ErrorCode } from './error-codes.ts';
export { ERROR_CODES, errorCategory, isErrorCode } from './error-codes.ts';
export type * from './processor.ts';
export { reconciliationId, uuidFromReconciliationId } from './reconciliation.ts';
export * from './transitions.ts';
export { TestLedger } from './coffer-test/ledger.ts';
export { CofferTestProcessor, StripeProcessor };

export const PROCESSOR_NAMES = [COFFER_TEST, STRIPE] as const;
export type ProcessorName = (typeof PROCESSOR_NAMES)[number];

export interface ConnectionConfig {
  processor: string;
  /** The connection's id: keeps the test processor's books apart per connection. */
  connection_id?: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown>;
}

export interface ProcessorDeps {
  /** The guarded outbound client's request, bound: `(r) => outbound.request(r)`. */
  http: ProcessorHttp;
  /** The test processor's books: one per process, made by the composition root (coffer-test/ledger.ts). */
  testLedger: TestLedger;
}

/** A connection's settings or credentials that cannot work; `field` names the offending one. */
export class ConnectionConfigError extends Error {
  readonly field: string;

  constructor(field: string, message: string) {
    super(message);
    this.name = 'ConnectionConfigError';
    this.field = field;
  }
}

/** Settings each processor takes, with their defaults; credentials are never listed with values. */
export const PROCESSOR_SETTINGS: Readonly<Record<ProcessorName, { settings: Record<string, unknown>; credentials: readonly string[] }>> = {
  'coffer-test': { settings: { settle_delay_ms: DEFAULT_SETTLE_DELAY_MS }, credentials: [] },
  stripe: { settings: { base_url: STRIPE_DEFAULT_BASE_URL, api_version: STRIPE_API_VERSION }, credentials: ['secret_key'] },
};

/** Throws ConnectionConfigError for an unknown processor, an unknown or invalid setting, or a missing credential. */
export function checkConnectionConfig(config: Pick<ConnectionConfig, 'processor' | 'settings' | 'credentials'>): void {
  if (!(PROCESSOR_NAMES as readonly string[]).includes(config.processor)) {
    throw new ConnectionConfigError('processor', `processor must be one of ${PROCESSOR_NAMES.join(', ')}`);
  }
  const spec = PROCESSOR_SETTINGS[config.processor as ProcessorName];
  for (const key of Object.keys(config.settings ?? {})) {
    if (!Object.hasOwn(spec.settings, key)) throw new ConnectionConfigError(`settings.${key}`, `${config.processor} has no setting ${key}`);
  }
  for (const key of Object.keys(config.credentials ?? {})) {
    if (!spec.credentials.includes(key)) throw new ConnectionConfigError(`credentials.${key}`, `${config.processor} takes no credential ${key}`);
  }
  for (const key of spec.credentials) {
    const value = config.credentials?.[key];
    if (typeof value !== 'string' || value.trim() === '') throw new ConnectionConfigError(`credentials.${key}`, `${config.processor} needs credentials.${key}`);
  }
  const s = config.settings ?? {};
  if (s.settle_delay_ms !== undefined && (!Number.isSafeInteger(s.settle_delay_ms) || (s.settle_delay_ms as number) < 0 || (s.settle_delay_ms as number) > 86_400_000)) {
    throw new ConnectionConfigError('settings.settle_delay_ms', 'settle_delay_ms must be an integer from 0 to 86400000');
  }
  if (s.base_url !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(String(s.base_url));
    } catch { /* reported below */ }
    if (typeof s.base_url !== 'string' || !url || (url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search || url.hash) {
      throw new ConnectionConfigError('settings.base_url', 'base_url must be an absolute http(s) URL without credentials, query or fragment');
    }
  }
  if (s.api_version !== undefined && (typeof s.api_version !== 'string' || !/^\d{4}-\d{2}-\d{2}(\.[a-z]+)?$/.test(s.api_version))) {
    throw new ConnectionConfigError('settings.api_version', 'api_version must be a Stripe API version such as 2024-06-20');
  }
}

export function createProcessor(config: ConnectionConfig, deps: ProcessorDeps): Processor {
  checkConnectionConfig(config);
  const s = config.settings ?? {};
  if (config.processor === COFFER_TEST) {
    return new CofferTestProcessor({ connectionId: config.connection_id, settleDelayMs: s.settle_delay_ms as number | undefined, ledger: deps.testLedger });
  }
  return new StripeProcessor({
    secretKey: config.credentials.secret_key as string,
    http: deps.http,
    baseUrl: s.base_url as string | undefined,
    apiVersion: s.api_version as string | undefined,
  });
}
