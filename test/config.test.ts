import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../src/config.ts';

/** Each value of `name` in `bad` stops loadConfig with a ConfigError whose message matches `message`. */
function refuses(name: string, bad: string[], message: RegExp): void {
  for (const value of bad) {
    assert.throws(() => loadConfig({ [name]: value }), (err: unknown) => err instanceof ConfigError && message.test(err.message), value);
  }
}

describe('WEBHOOK_RETRY_SCHEDULE', () => {
  it('defaults to the Standard Webhooks schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    const s = 1000;
    const m = 60 * s;
    const h = 60 * m;
    assert.deepEqual(loadConfig({}).webhookRetrySchedule, [5 * s, 5 * m, 30 * m, 2 * h, 5 * h, 10 * h, 10 * h]);
  });

  it('takes durations in ms, s, m and h, spaces allowed', () => {
    assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '50ms, 2s,1m ,24h' }).webhookRetrySchedule, [50, 2000, 60_000, 86_400_000]);
  });

  it('refuses anything else, naming the setting', () => {
    refuses('WEBHOOK_RETRY_SCHEDULE', ['5', '5 s', '1d', '0ms', '25h', '5s,,5m', '-5s', '1.5s', Array.from({ length: 101 }, () => '1s').join(',')], /WEBHOOK_RETRY_SCHEDULE/);
  });
});

// Whole-number settings: the default, values taken as given (0 meaning off or none), and refusals naming the setting.
const WHOLE_NUMBERS = [
  // 0 turns the statement limit off.
  { name: 'DATABASE_STATEMENT_TIMEOUT_MS', field: 'databaseStatementTimeoutMs', byDefault: 30_000, taken: [0, 5000], bad: ['-1', '3600001', 'abc', '1.5'], message: /DATABASE_STATEMENT_TIMEOUT_MS/ },
  // The Detokenize Limit of a tenant without a quota of its own: expressions per request.
  {
    name: 'DETOKENIZE_LIMIT', field: 'detokenizeLimit', byDefault: 100, taken: [1, 10_000], bad: ['0', '10001', 'abc', '1.5'],
    message: /DETOKENIZE_LIMIT must be a whole number from 1 to 10000/,
  },
  // 0 keeps no idle isolate.
  {
    name: 'SANDBOX_WARM_MEMORY_MB', field: 'sandboxWarmMemoryMb', byDefault: 512, taken: [0, 2048], bad: ['-1', '1048577', '512MB', '1.5', 'abc'],
    message: /SANDBOX_WARM_MEMORY_MB must be a whole number from 0 to 1048576/,
  },
  { name: 'SANDBOX_PROCESSES', field: 'sandboxProcesses', byDefault: 1, taken: [1, 64], bad: ['0', '65', 'abc'], message: /SANDBOX_PROCESSES/ },
  { name: 'SANDBOX_TENANT_QUEUE', field: 'sandboxTenantQueue', byDefault: 80, taken: [0, 500], bad: ['-1', '100001'], message: /SANDBOX_TENANT_QUEUE/ },
  { name: 'SANDBOX_SLOT_DEPTH', field: 'sandboxSlotDepth', byDefault: 8, taken: [1, 1000], bad: ['0', '1001', 'x'], message: /SANDBOX_SLOT_DEPTH/ },
  { name: 'SANDBOX_HOST_CALL_BUDGET_MS', field: 'sandboxHostCallBudgetMs', byDefault: 10_000, taken: [1, 60_000], bad: ['0', '3600001'], message: /SANDBOX_HOST_CALL_BUDGET_MS/ },
  { name: 'SANDBOX_TENANT_HOST_CALLS', field: 'sandboxTenantHostCalls', byDefault: 8, taken: [1, 1000], bad: ['0', '1001'], message: /SANDBOX_TENANT_HOST_CALLS/ },
  // 0: no quarantine.
  { name: 'SANDBOX_QUARANTINE_SECONDS', field: 'sandboxQuarantineSeconds', byDefault: 600, taken: [0, 86_400], bad: ['-1', '86401'], message: /SANDBOX_QUARANTINE_SECONDS/ },
  { name: 'SANDBOX_NICE', field: 'sandboxNice', byDefault: 10, taken: [0, 19], bad: ['-1', '20'], message: /SANDBOX_NICE/ },
  // Tokens a minute public and session keys may create; 0 turns each limit off.
  {
    name: 'PUBLIC_TOKEN_CREATE_RATE', field: 'publicTokenCreateRate', byDefault: 60, taken: [0, 600], bad: ['-1', '1000001', 'abc', '1.5'],
    message: /PUBLIC_TOKEN_CREATE_RATE must be a whole number from 0 to 1000000/,
  },
  { name: 'PUBLIC_TOKEN_CREATE_BURST', field: 'publicTokenCreateBurst', byDefault: 30, taken: [1, 100], bad: ['0', '1000001', 'abc'], message: /PUBLIC_TOKEN_CREATE_BURST/ },
  { name: 'PUBLIC_TOKEN_CREATE_KEY_RATE', field: 'publicTokenCreateKeyRate', byDefault: 6000, taken: [0, 60_000], bad: ['-1', '10000001', 'abc'], message: /PUBLIC_TOKEN_CREATE_KEY_RATE/ },
  { name: 'PUBLIC_TOKEN_CREATE_KEY_BURST', field: 'publicTokenCreateKeyBurst', byDefault: 1000, taken: [1, 5000], bad: ['0', '10000001', 'abc'], message: /PUBLIC_TOKEN_CREATE_KEY_BURST/ },
] as const;

describe('SANDBOX_CONCURRENCY and a tenant\'s share of it', () => {
  it('defaults to 8, of which a tenant holds half and queues ten times the whole; REACTOR_CONCURRENCY, the older name, is read when it is not set', () => {
    assert.deepEqual([loadConfig({}).sandboxConcurrency, loadConfig({}).sandboxTenantConcurrency, loadConfig({}).sandboxTenantQueue], [8, 4, 80]);
    assert.deepEqual([loadConfig({ REACTOR_CONCURRENCY: '3' }).sandboxConcurrency, loadConfig({ REACTOR_CONCURRENCY: '3' }).sandboxTenantConcurrency], [3, 2]);
    assert.equal(loadConfig({ REACTOR_CONCURRENCY: '3', SANDBOX_CONCURRENCY: '12' }).sandboxConcurrency, 12);
    assert.equal(loadConfig({ SANDBOX_CONCURRENCY: '12', SANDBOX_TENANT_CONCURRENCY: '12' }).sandboxTenantConcurrency, 12);
  });

  it('refuses a tenant share above the whole, naming the setting', () => {
    refuses('SANDBOX_TENANT_CONCURRENCY', ['0', '9'], /SANDBOX_TENANT_CONCURRENCY/);
    refuses('SANDBOX_CONCURRENCY', ['0', '1001'], /SANDBOX_CONCURRENCY/);
  });
});

for (const setting of WHOLE_NUMBERS) {
  describe(setting.name, () => {
    it(`defaults to ${setting.byDefault} and takes ${setting.taken.join(' and ')}`, () => {
      assert.equal(loadConfig({})[setting.field], setting.byDefault);
      for (const value of setting.taken) assert.equal(loadConfig({ [setting.name]: String(value) })[setting.field], value);
    });

    it('refuses a value out of range or not a whole number, naming the setting', () => {
      refuses(setting.name, [...setting.bad], setting.message);
    });
  });
}

describe('OUTBOUND_CONNECTIONS, OUTBOUND_TENANT_CONNECTIONS and PROXY_MAX_DECOMPRESSED_BYTES', () => {
  it('a tenant\'s share defaults to half the pool, and may not be more than it', () => {
    assert.deepEqual([loadConfig({}).outboundConnections, loadConfig({}).outboundTenantConnections], [64, 32]);
    assert.equal(loadConfig({ OUTBOUND_CONNECTIONS: '8' }).outboundTenantConnections, 4);
    assert.equal(loadConfig({ OUTBOUND_CONNECTIONS: '1' }).outboundTenantConnections, 1);
    assert.equal(loadConfig({ OUTBOUND_CONNECTIONS: '8', OUTBOUND_TENANT_CONNECTIONS: '8' }).outboundTenantConnections, 8);
    assert.throws(
      () => loadConfig({ OUTBOUND_CONNECTIONS: '8', OUTBOUND_TENANT_CONNECTIONS: '9' }),
      (err: unknown) => err instanceof ConfigError && /OUTBOUND_TENANT_CONNECTIONS \(9\) must not be more than OUTBOUND_CONNECTIONS \(8\)/.test(err.message),
    );
    refuses('OUTBOUND_CONNECTIONS', ['0', '10001', 'x'], /OUTBOUND_CONNECTIONS must be a whole number from 1 to 10000/);
    refuses('OUTBOUND_TENANT_CONNECTIONS', ['0', '1.5'], /OUTBOUND_TENANT_CONNECTIONS must be a whole number from 1 to 10000/);
  });

  it('the decompressed limit follows PROXY_MAX_BODY_BYTES unless set', () => {
    assert.equal(loadConfig({}).proxyMaxDecompressedBytes, 1_048_576);
    assert.equal(loadConfig({ PROXY_MAX_BODY_BYTES: '4096' }).proxyMaxDecompressedBytes, 4096);
    assert.equal(loadConfig({ PROXY_MAX_BODY_BYTES: '4096', PROXY_MAX_DECOMPRESSED_BYTES: '65536' }).proxyMaxDecompressedBytes, 65_536);
    refuses('PROXY_MAX_DECOMPRESSED_BYTES', ['0', '1023', '104857601', '1MB'], /PROXY_MAX_DECOMPRESSED_BYTES must be a whole number from 1024 to 104857600/);
  });
});

describe('OUTBOUND_ALLOWLIST and COFFER_KEYS', () => {
  const key = Buffer.alloc(32, 7).toString('base64');

  it('a malformed entry is reported with the other problems, before anything starts', () => {
    for (const bad of ['*.corp.example', '10.0.0.0/33', 'http://host/']) {
      assert.throws(
        () => loadConfig({ OUTBOUND_ALLOWLIST: `127.0.0.1,${bad}`, PORT: '70000' }),
        (err: unknown) => err instanceof ConfigError && err.problems.length === 2 && /OUTBOUND_ALLOWLIST entry/.test(err.message) && /PORT/.test(err.message),
        bad,
      );
    }
    assert.deepEqual(loadConfig({ OUTBOUND_ALLOWLIST: '127.0.0.1, 10.0.0.0/8,vault.corp.example' }).outboundAllowlist, ['127.0.0.1', '10.0.0.0/8', 'vault.corp.example']);
  });

  it('a malformed keyring is reported naming COFFER_KEYS, and never a key', () => {
    const secret = Buffer.alloc(16, 9).toString('base64');
    for (const bad of ['garbage', `short:${secret}`, `a:${key},a:${key}`, `bad id!:${key}`, ',']) {
      assert.throws(
        () => loadConfig({ COFFER_KEYS: bad }),
        (err: unknown) => err instanceof ConfigError && /COFFER_KEYS/.test(err.message) && !err.message.includes(secret),
        bad,
      );
    }
    assert.equal(loadConfig({ COFFER_KEYS: `20260101:${key}` }).cofferKeys, `20260101:${key}`);
  });

  it('an entry written the other way round (the key before the id) is refused without quoting the key', () => {
    const secret = Buffer.alloc(32, 9).toString('base64');
    const urlSafe = Buffer.alloc(32, 11).toString('base64url');
    for (const bad of [`${secret}:main`, `main:${key},${secret}:second`, `${urlSafe}:main`]) {
      assert.throws(
        () => loadConfig({ COFFER_KEYS: bad }),
        (err: unknown) => err instanceof ConfigError && /COFFER_KEYS/.test(err.message) && !err.message.includes(secret.slice(0, 8)) && !err.message.includes(urlSafe.slice(0, 8)),
        bad,
      );
    }
  });
});

describe('CORS_ORIGINS', () => {
  it('unset or *: any origin; set but empty: CORS off', () => {
    assert.equal(loadConfig({}).corsOrigins, '*');
    assert.equal(loadConfig({ CORS_ORIGINS: ' * ' }).corsOrigins, '*');
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '' }).corsOrigins, []);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '  ' }).corsOrigins, []);
  });

  it('normalises each origin to the form browsers send: lower case, no default port, no trailing slash', () => {
    assert.deepEqual(
      loadConfig({ CORS_ORIGINS: 'HTTPS://Shop.Example:443/, http://localhost:3000,http://admin.example:80,https://[::1]:8443,https://shop.example' }).corsOrigins,
      ['https://shop.example', 'http://localhost:3000', 'http://admin.example', 'https://[::1]:8443'],
    );
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://bücher.example' }).corsOrigins, ['https://xn--bcher-kva.example']);
  });

  it('refuses anything that is not an http(s) origin, naming the setting and the entry', () => {
    const bad = [
      'shop.example', 'ftp://shop.example', 'https://shop.example/app', 'https://shop.example?x=1', 'https://shop.example#top',
      'https://user:pw@shop.example', 'https://*.shop.example', 'https://', 'https://shop.example:99999', 'null', 'https:shop.example',
      'https://shop example', 'https://shop.example\\',
    ];
    for (const entry of bad) {
      assert.throws(
        () => loadConfig({ CORS_ORIGINS: `https://ok.example,${entry}` }),
        (err: unknown) => err instanceof ConfigError && err.problems.length === 1 && err.message.includes(`CORS_ORIGINS entry "${entry}" is not an origin`),
        entry,
      );
    }
    assert.throws(() => loadConfig({ CORS_ORIGINS: '*,https://shop.example' }), (err: unknown) => err instanceof ConfigError && /CORS_ORIGINS: \* allows every origin/.test(err.message));
  });
});

describe('LOG_FORMAT', () => {
  it('unset (or empty) leaves the choice to where the log goes; json and pretty force one', () => {
    assert.equal(loadConfig({}).logFormat, undefined);
    assert.equal(loadConfig({ LOG_FORMAT: ' ' }).logFormat, undefined);
    assert.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
    assert.equal(loadConfig({ LOG_FORMAT: ' pretty ' }).logFormat, 'pretty');
  });

  it('refuses anything else, naming the setting, its values and what unset means', () => {
    for (const value of ['text', 'JSON', 'auto', 'pretty,json']) {
      assert.throws(
        () => loadConfig({ LOG_FORMAT: value }),
        (err: unknown) => err instanceof ConfigError && err.problems.length === 1
          && err.problems[0] === `LOG_FORMAT must be one of json, pretty (got "${value}"): json for JSON lines, pretty for one readable line each; unset, pretty on a terminal and JSON otherwise`,
        value,
      );
    }
  });
});
