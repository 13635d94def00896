import type { KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { GooglePayError } from './errors.ts';
import { defaultDecryptThreads } from './decrypt-pool.ts';
import { parsePrivateKeys } from './keys.ts';
import { parseRootKeys, usableRootKeys } from './root-keys.ts';

/** Google's root signing keys for each Google Pay environment (PAYMENTS-FACTS §2, step 2). */
export const GOOGLE_ROOT_KEYS_URLS = {
  production: 'https://payments.developers.google.com/paymentmethodtoken/keys.json',
  test: 'https://payments.developers.google.com/paymentmethodtoken/test/keys.json',
} as const;

export type GooglePayEnvironment = keyof typeof GOOGLE_ROOT_KEYS_URLS;

/** Where the root signing keys come from: a keys.json file, or a URL (Google's, by environment, unless set). */
export type RootKeysLocation = { kind: 'file'; path: string } | { kind: 'url'; url: string };

export type GooglePaySettings = {
  /** GOOGLE_PAY_PRIVATE_KEYS, parsed: every key is tried. Empty: only test-mode tokens can be read. */
  privateKeys: KeyObject[];
  rootKeys: RootKeysLocation;
  environment: GooglePayEnvironment;
  /** GOOGLE_PAY_GATEWAY_ID: the gateway name merchants put in their Google Pay request. */
  gatewayId: string;
  /** `gateway:<gatewayId>`: what Google signs each message for. */
  recipientId: string;
  /** GOOGLE_PAY_TEST_MODE: whether test-mode tokens (protocolVersion `Coffer`) are read. */
  testMode: boolean;
  /** GOOGLE_PAY_DECRYPT_THREADS: worker threads that decrypt ECv2 tokens (decrypt-pool.ts); 0: on the event loop. */
  decryptThreads: number;
};

/** GOOGLE_PAY_DECRYPT_THREADS at most: each thread is a V8 isolate of its own (~10 MB). */
export const MAX_DECRYPT_THREADS = 16;

const ENVIRONMENTS: readonly GooglePayEnvironment[] = ['production', 'test'];
const ON = ['on', '1', 'true'];
const OFF = ['off', '0', 'false'];
/** Gateway names in Google's list are short lowercase words; letters, digits and `._-` leave room without allowing a `:` or space. */
const GATEWAY_ID = /^[A-Za-z0-9._-]{1,64}$/;

/**
 * The GOOGLE_PAY_* settings. `get` returns a setting's trimmed value, undefined when unset or
 * empty; every problem is added to `problems`, so a start reports them all at once. A keys.json
 * file is read and checked now, so a wrong path stops the start rather than the first payment.
 */
export function readGooglePaySettings(get: (name: string) => string | undefined, problems: string[], now = Date.now()): GooglePaySettings {
  const rawKeys = get('GOOGLE_PAY_PRIVATE_KEYS');
  let privateKeys: KeyObject[] = [];
  if (rawKeys !== undefined) {
    const parsed = parsePrivateKeys(rawKeys, 'GOOGLE_PAY_PRIVATE_KEYS');
    privateKeys = parsed.keys;
    problems.push(...parsed.problems);
  }

  const rawEnvironment = get('GOOGLE_PAY_ENVIRONMENT') ?? 'test';
  let environment: GooglePayEnvironment = 'test';
  if ((ENVIRONMENTS as readonly string[]).includes(rawEnvironment)) environment = rawEnvironment as GooglePayEnvironment;
  else problems.push(`GOOGLE_PAY_ENVIRONMENT must be one of ${ENVIRONMENTS.join(', ')} (got "${rawEnvironment}")`);

  const gatewayId = get('GOOGLE_PAY_GATEWAY_ID') ?? 'coffer';
  if (!GATEWAY_ID.test(gatewayId)) problems.push(`GOOGLE_PAY_GATEWAY_ID must be 1 to 64 letters, digits, ".", "_" or "-" (got "${gatewayId.slice(0, 100)}")`);

  const rawTestMode = (get('GOOGLE_PAY_TEST_MODE') ?? 'on').toLowerCase();
  const testMode = !OFF.includes(rawTestMode);
  if (!ON.includes(rawTestMode) && !OFF.includes(rawTestMode)) problems.push(`GOOGLE_PAY_TEST_MODE must be on or off (got "${rawTestMode}")`);

  const rawThreads = get('GOOGLE_PAY_DECRYPT_THREADS');
  let decryptThreads = defaultDecryptThreads();
  if (rawThreads !== undefined) {
    if (/^\d{1,3}$/.test(rawThreads) && Number(rawThreads) <= MAX_DECRYPT_THREADS) decryptThreads = Number(rawThreads);
    else problems.push(`GOOGLE_PAY_DECRYPT_THREADS must be a whole number from 0 to ${MAX_DECRYPT_THREADS} (got "${rawThreads.slice(0, 20)}")`);
  }

  return {
    privateKeys,
    rootKeys: rootKeysLocation(get('GOOGLE_PAY_ROOT_KEYS'), environment, problems, now),
    environment,
    gatewayId,
    recipientId: `gateway:${gatewayId}`,
    testMode,
    decryptThreads,
  };
}

function rootKeysLocation(raw: string | undefined, environment: GooglePayEnvironment, problems: string[], now: number): RootKeysLocation {
  if (raw === undefined) return { kind: 'url', url: GOOGLE_ROOT_KEYS_URLS[environment] };
  if (/^https?:\/\//i.test(raw)) {
    try {
      new URL(raw);
    } catch {
      problems.push('GOOGLE_PAY_ROOT_KEYS is not a valid URL');
    }
    return { kind: 'url', url: raw };
  }
  const file = path.resolve(raw);
  const problem = rootKeysFileProblem(file, now);
  if (problem) problems.push(`GOOGLE_PAY_ROOT_KEYS: ${problem}`);
  return { kind: 'file', path: file };
}

/** What is wrong with a keys.json file, if anything: unreadable, not a keys list, or no ECv2 key valid now. */
function rootKeysFileProblem(file: string, now: number): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    return `the file ${file} could not be read (${(err as NodeJS.ErrnoException).code ?? 'error'}); it must be a path to a keys.json, or an http(s) URL`;
  }
  try {
    if (usableRootKeys(parseRootKeys(text, file), now).length === 0) return `the file ${file} holds no ECv2 key with a keyExpiration still to come`;
  } catch (err) {
    return err instanceof GooglePayError ? err.message : `the file ${file} could not be read`;
  }
  return undefined;
}
