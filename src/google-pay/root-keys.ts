import fs from 'node:fs/promises';
import type { KeyObject } from 'node:crypto';
import type { OutboundClient } from '../outbound/client.ts';
import { GooglePayError } from './errors.ts';
import { isPlainObject, millis, p256FromSpki, strictBase64 } from './primitives.ts';
import { ECV2 } from './token.ts';

/** One of Google's root signing keys, from a keys.json. */
export type RootKey = {
  protocolVersion: string;
  /** Milliseconds since the epoch; ECv2 keys without one are never used. */
  keyExpiration: number | undefined;
  key: KeyObject;
};

/** Step 2: the keys that may sign an intermediate key at `now`: ECv2, with a keyExpiration after `now`. */
export function usableRootKeys(keys: readonly RootKey[], now: number): RootKey[] {
  return keys.filter((k) => k.protocolVersion === ECV2 && k.keyExpiration !== undefined && k.keyExpiration > now);
}

/**
 * Google's keys.json: `{"keys": [{"keyValue", "protocolVersion", "keyExpiration"}, …]}`.
 * Returns its ECv2 keys whose keyValue is a P-256 public key (others are another protocol's,
 * or unusable, and skipped); throws root_keys_unavailable if the text is not such a list.
 * `source` names where it came from, for the message.
 */
export function parseRootKeys(text: string, source: string): RootKey[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new GooglePayError('root_keys_unavailable', `the root signing keys from ${source} are not JSON`);
  }
  if (!isPlainObject(parsed) || !Array.isArray(parsed.keys)) {
    throw new GooglePayError('root_keys_unavailable', `the root signing keys from ${source} are not a keys.json ({"keys": [...]})`);
  }
  const keys: RootKey[] = [];
  for (const entry of parsed.keys) {
    if (!isPlainObject(entry) || entry.protocolVersion !== ECV2 || typeof entry.keyValue !== 'string') continue;
    const der = strictBase64(entry.keyValue);
    const key = der && p256FromSpki(der);
    if (key) keys.push({ protocolVersion: ECV2, keyExpiration: millis(entry.keyExpiration), key });
  }
  return keys;
}

/** Reads a keys.json's text; failures are GooglePayErrors (root_keys_unavailable). */
export type RootKeyLoader = () => Promise<string>;

/** Google's keys.json by URL, through the guarded outbound client (so OUTBOUND_ALLOWLIST applies, as everywhere). */
export function urlRootKeyLoader(outbound: Pick<OutboundClient, 'request'>, url: string): RootKeyLoader {
  const where = withoutQuery(url);
  return async () => {
    let response;
    try {
      response = await outbound.request({ url, timeoutMs: 10_000, maxResponseBytes: 1_048_576, followRedirects: true });
    } catch (err) {
      throw new GooglePayError('root_keys_unavailable', `Google's root signing keys could not be fetched from ${where}: ${(err as Error).message}`);
    }
    if (response.status !== 200) {
      throw new GooglePayError('root_keys_unavailable', `Google's root signing keys could not be fetched from ${where}: it answered ${response.status}`);
    }
    return response.body.toString('utf8');
  };
}

/** A URL as messages may show it: a query might hold a credential. */
export function withoutQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return 'the configured URL';
  }
}

/** A keys.json file (GOOGLE_PAY_ROOT_KEYS), read again whenever the cached keys lapse. */
export function fileRootKeyLoader(file: string): RootKeyLoader {
  return async () => {
    try {
      return await fs.readFile(file, 'utf8');
    } catch (err) {
      throw new GooglePayError('root_keys_unavailable', `the root signing keys file ${file} could not be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  };
}

export type RootKeySourceOptions = {
  load: RootKeyLoader;
  /** Where the keys come from (a URL or a file), for messages. */
  source: string;
  /** The longest keys are kept before being loaded again, so keys Google adds are picked up; default 24 h. */
  maxAgeMs?: number;
  /** After a failed load, how long callers get that failure at once before the next try; default 10 s. */
  retryAfterFailureMs?: number;
};

type Cached = { keys: RootKey[]; until: number };

/**
 * Google's root signing keys, loaded on first use and kept until the earliest keyExpiration
 * among them (or `maxAgeMs`), then loaded again. Concurrent callers share one load. A failed
 * load is an error only when no kept key is still usable: a keys.json server that is down
 * does not stop payments while the keys Coffer has remain valid.
 */
export class RootKeySource {
  readonly source: string;
  readonly #load: RootKeyLoader;
  readonly #maxAgeMs: number;
  readonly #retryAfterFailureMs: number;
  #cached: Cached | undefined;
  #loading: Promise<RootKey[]> | undefined;
  #failure: { error: GooglePayError; until: number } | undefined;

  constructor(options: RootKeySourceOptions) {
    this.source = options.source;
    this.#load = options.load;
    this.#maxAgeMs = options.maxAgeMs ?? 24 * 3_600_000;
    this.#retryAfterFailureMs = options.retryAfterFailureMs ?? 10_000;
  }

  /** The root keys usable at `now` (ms): at least one, else a GooglePayError (no_valid_root_key, root_keys_unavailable). */
  async get(now: number): Promise<RootKey[]> {
    const cached = this.#cached;
    if (cached && now < cached.until) return this.#usable(cached.keys, now);
    const stale = cached ? usableRootKeys(cached.keys, now) : [];
    const failure = this.#failure;
    if (failure && now < failure.until) {
      if (stale.length > 0) return stale;
      throw failure.error;
    }
    try {
      return this.#usable(await this.#reload(now), now);
    } catch (err) {
      if (!(err instanceof GooglePayError) || err.code !== 'root_keys_unavailable' || stale.length === 0) throw err;
      return stale;
    }
  }

  #usable(keys: RootKey[], now: number): RootKey[] {
    const usable = usableRootKeys(keys, now);
    if (usable.length === 0) {
      throw new GooglePayError('no_valid_root_key', `the root signing keys from ${this.source} hold no ECv2 key that has not expired`);
    }
    return usable;
  }

  #reload(now: number): Promise<RootKey[]> {
    this.#loading ??= this.#loadOnce(now).finally(() => {
      this.#loading = undefined;
    });
    return this.#loading;
  }

  async #loadOnce(now: number): Promise<RootKey[]> {
    try {
      const keys = parseRootKeys(await this.#load(), this.source);
      const kept = usableRootKeys(keys, now);
      // Kept until the first of them expires: then it must no longer verify, and Google will have published its successor.
      const until = kept.length === 0 ? now + this.#retryAfterFailureMs : Math.min(now + this.#maxAgeMs, ...kept.map((k) => k.keyExpiration!));
      this.#cached = { keys: kept, until };
      this.#failure = undefined;
      return kept;
    } catch (err) {
      const error = err instanceof GooglePayError ? err : new GooglePayError('root_keys_unavailable', `the root signing keys from ${this.source} could not be loaded`);
      this.#failure = { error, until: now + this.#retryAfterFailureMs };
      throw error;
    }
  }
}
