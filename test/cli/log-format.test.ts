import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createServer } from '../../src/http/server.ts';
import { createLogger, logFormatFor } from '../../src/logger.ts';
import { keepOutput, killServed, runCli, serve } from '../helpers/cli.ts';
import { call } from '../helpers/http.ts';
import { scanLogs } from '../helpers/log-scan.ts';
import { until } from '../helpers/until.ts';
import { createTestDatabase, rememberSecret } from '../helpers/server.ts';

/**
 * LOG_FORMAT: JSON lines, or one readable line per entry (pino-pretty); unset, readable on a
 * terminal and JSON otherwise. Both are redacted alike, and the run's log scan reads both.
 */

const root = path.resolve(import.meta.dirname, '../..');
/** The start of a readable line: `[time] LEVEL: message`. */
const PRETTY = /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL): \S/;
const COLOURS = /\x1b\[[0-9;]*m/g;
const PAN = '4111111111111111';

const dirs: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-log-format-'));
  dirs.push(dir);
  return dir;
}

/** The log scan of test/run.ts over `text` alone, for `secrets`: its leaks and what it reported. */
function scan(text: string, secrets: string[]): { leaks: number; report: string } {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'output.log'), text);
  fs.writeFileSync(path.join(dir, 'secrets-1.txt'), secrets.map((s) => `${s}\n`).join(''));
  let report = '';
  const leaks = scanLogs(dir, true, (t) => (report += t));
  return { leaks, report };
}

after(() => {
  killServed();
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the log format', () => {
  it('is LOG_FORMAT when set, otherwise pretty on a terminal and JSON lines anywhere else', () => {
    assert.equal(logFormatFor(undefined, true), 'pretty');
    assert.equal(logFormatFor(undefined, false), 'json');
    assert.equal(logFormatFor('json', true), 'json');
    assert.equal(logFormatFor('pretty', false), 'pretty');
  });

  it('pretty: one line per entry, time, level, message and what matters of a request; secrets redacted as in JSON', async () => {
    const entries: string[] = [];
    const log = createLogger('info', { write: (s: string) => void entries.push(s) }, 'pretty');
    const app = createServer(log);
    app.get('/things', { config: { access: 'public' } }, async () => ({ ok: true }));
    app.get('/boom', { config: { access: 'public' } }, async () => {
      throw new Error('kaput');
    });
    await app.ready();
    await app.inject({ method: 'GET', url: '/things?access_token=s3cr3t-pretty&page=2', headers: { 'svc-api-key': 'key_s3cr3t-header', 'x-request-id': 'order-42' } });
    await app.inject({ method: 'GET', url: '/boom' });
    log.child({ worker: 2 }).info({ url: 'http://127.0.0.1:8080', apiKey: 'key_s3cr3t-field', err: 'not really' }, 'coffer ready');
    log.warn({ err: { message: 'statement timeout', code: '57014' } }, 'database statement cancelled');
    log.info('control characters \u001b[31m\nare shown escaped');
    await app.close();

    const all = entries.join('');
    for (const secret of ['s3cr3t-pretty', 'key_s3cr3t-header', 'key_s3cr3t-field']) assert.ok(!all.includes(secret), `${secret} logged:\n${all}`);
    assert.ok(!/"(pid|hostname|reqId)"/.test(all), all);
    const lines = all.split('\n').filter(Boolean);
    assert.match(lines[0], /^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: incoming request GET \/things\?access_token=\[Redacted\]&page=2 \(req order-42\)$/);
    assert.match(lines[1], /^\[[\d:.]+\] INFO: request completed 200 in \d+\.\d ms \(req order-42\)$/);
    assert.match(lines[2], /^\[[\d:.]+\] INFO: incoming request GET \/boom \(req [0-9a-f]{8}\)$/, 'a generated request id is shown by its start');
    // An unexpected error has its stack on the lines after; every other entry is one line.
    assert.match(lines[3], /^\[[\d:.]+\] ERROR: unhandled error: kaput \(req [0-9a-f]{8}\)\s*$/);
    assert.match(lines[4], /^ {4}err: Error: kaput$/);
    assert.match(lines[5], /^ {8}at /);
    const rest = lines.slice(lines.findIndex((l, i) => i > 3 && PRETTY.test(l)));
    assert.match(rest[0], /^\[[\d:.]+\] INFO: request completed 500 in \d+\.\d ms \(req [0-9a-f]{8}\)$/);
    assert.match(rest[1], /^\[[\d:.]+\] INFO: coffer ready: not really \{"worker":2,"url":"http:\/\/127\.0\.0\.1:8080","apiKey":"\[Redacted\]"\}$/);
    assert.match(rest[2], /^\[[\d:.]+\] WARN: database statement cancelled: statement timeout \(57014\)$/);
    assert.match(rest[3], /^\[[\d:.]+\] INFO: control characters \\u001b\[31m\\nare shown escaped$/);
    assert.equal(rest.length, 4);
    assert.ok(rest.every((l) => PRETTY.test(l)));
  });

  it('json: the same entries as JSON lines, unchanged', async () => {
    const entries: string[] = [];
    const app = createServer(createLogger('info', { write: (s: string) => void entries.push(s) }, 'json'));
    app.get('/things', { config: { access: 'public' } }, async () => ({ ok: true }));
    await app.ready();
    await app.inject({ method: 'GET', url: '/things?access_token=s3cr3t-json&page=2' });
    await app.close();
    const lines = entries.map((e) => JSON.parse(e));
    assert.deepEqual(lines.map((l) => l.msg), ['incoming request', 'request completed']);
    assert.equal(lines[0].req.url, '/things?access_token=[Redacted]&page=2');
    assert.equal(lines[1].res.status, 200);
    assert.equal(typeof lines[0].pid, 'number');
  });

  it('the log scan reads pretty lines, coloured or not: it finds a secret planted in them', () => {
    const line = '[12:00:00.000] \x1b[32mINFO\x1b[39m: \x1b[36mincoming request GET /things?note=planted-value-77 (req 0123abcd)\x1b[39m\n';
    assert.equal(scan(line, ['planted-value-77']).leaks, 1);
    assert.equal(scan(line.replace(COLOURS, ''), ['planted-value-77']).leaks, 1);
    assert.equal(scan(line, ['another-secret']).leaks, 0);
  });
});

describe('coffer serve and LOG_FORMAT', () => {
  let databaseUrl: string;
  let drop: () => Promise<void>;
  const dataDir = tempDir();
  before(async () => {
    ({ url: databaseUrl, drop } = await createTestDatabase());
  });
  after(async () => {
    await drop?.();
  });

  it('refuses an unknown LOG_FORMAT before starting anything, naming the setting and its values', async () => {
    const dir = tempDir();
    for (const args of [['serve'], ['serve', '--workers', '2'], ['migrate']]) {
      const res = await runCli(args, { DATA_DIR: dir, LOG_FORMAT: 'text' });
      assert.equal(res.code, 1, args.join(' '));
      assert.match(res.stderr, /^coffer: Invalid configuration:\n {2}- LOG_FORMAT must be one of json, pretty \(got "text"\)/, res.stderr);
    }
    assert.equal(fs.existsSync(path.join(dir, 'postgres')), false, 'nothing was started');
  });

  it('LOG_FORMAT=pretty: readable lines on stdout, none holding a secret the run handled; the scan finds a planted one', async () => {
    const served = await serve({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir, LOG_FORMAT: 'pretty' });
    const key = served.firstKey!;
    assert.ok(key, 'the first start printed its key, on stderr as always');
    const querySecret = `query-secret-${randomUUID()}`;
    const planted = `not-a-credential-${randomUUID()}`;
    rememberSecret(querySecret, PAN);
    assert.equal((await call(served.url, 'GET', `/ping?access_token=${querySecret}&note=${planted}`)).status, 200);
    const app = await call(served.url, 'POST', '/applications', { key, body: { name: 'logs', type: 'private', permissions: ['token:create', 'token:read'] } });
    assert.equal(app.status, 201, app.text);
    rememberSecret(app.body.key);
    const token = await call(served.url, 'POST', '/tokens', { key: app.body.key, body: { type: 'card_number', data: PAN } });
    assert.equal(token.status, 201, token.text);
    assert.equal((await call(served.url, 'GET', `/tokens/${token.body.id}`, { key: app.body.key })).status, 200);
    assert.equal(await served.stop(), 0);

    const out = served.stdout();
    const lines = out.split('\n').filter(Boolean);
    assert.ok(lines.length >= 8, out);
    for (const line of lines) assert.match(line, PRETTY);
    assert.ok(lines.some((l) => /INFO: coffer ready \{"url":"http:\/\/127\.0\.0\.1:\d+","first_start":true\}$/.test(l)), out);
    assert.ok(lines.some((l) => l.includes(`INFO: incoming request GET /ping?access_token=[Redacted]&note=${planted} (req `)), out);
    assert.ok(lines.some((l) => /INFO: request completed 201 in \d+\.\d ms \(req [0-9a-f]{8}\)$/.test(l)), out);
    assert.ok(lines.some((l) => /INFO: shutting down \{"signal":"SIGTERM"\}$/.test(l)), out);
    assert.ok(!out.includes(key), 'the key is on stderr only');

    const handled = [key, app.body.key, querySecret, PAN];
    assert.deepEqual(scan(out, handled), { leaks: 0, report: `log scan: ${lines.length} lines from 1 log files (servers and CLI runs) checked for 4 secrets, 0 leaks\n` });
    const caught = scan(out, [...handled, planted]);
    assert.equal(caught.leaks, 1, caught.report);
    assert.match(caught.report, /secret found in log output\.log: \[[\d:.]+\] INFO: incoming request GET \/ping/);
  });

  it('LOG_FORMAT unset and stdout a pipe (a service manager, a collector): JSON lines', async () => {
    const served = await serve({ DATABASE_URL: databaseUrl, DATA_DIR: dataDir });
    assert.equal((await call(served.url, 'GET', '/ping')).status, 200);
    assert.equal(await served.stop(), 0);
    const lines = served.stdout().split('\n').filter(Boolean).map((l) => JSON.parse(l) as { msg: string; pid: number });
    assert.ok(lines.some((l) => l.msg === 'coffer ready'));
    assert.ok(lines.some((l) => l.msg === 'request completed'));
  });

  const terminal = spawnSync('script', ['--version']).status === 0;
  it('LOG_FORMAT unset on a terminal: readable coloured lines, from the primary and each worker of `serve --workers 2` alike', { skip: !terminal && 'needs script(1) (util-linux) for a pseudo-terminal' }, async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info', TERM: 'xterm' };
    delete env.LOG_FORMAT;
    delete env.NO_COLOR;
    // script runs the command on a pseudo-terminal of its own: stdout and stderr are a terminal, as in a shell.
    const child: ChildProcess = spawn('script', ['-qefc', `exec ${process.execPath} src/cli.ts serve --workers 2`, '/dev/null'], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout!.on('data', (d) => (screen += d));
    child.stderr!.on('data', (d) => (screen += d));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    try {
      const end = Date.now() + 60_000;
      while (!/INFO: coffer ready/.test(screen.replace(COLOURS, ''))) {
        if (Date.now() > end || child.exitCode !== null) throw new Error(`serve did not start on the terminal:\n${screen}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      const url = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(screen.replace(COLOURS, ''))![1];
      assert.equal((await call(url, 'GET', '/ping')).status, 200);
      // The worker logs the request once its answer has gone out, which the caller may see first:
      // Ctrl-C only after that line (or 10 s), so the shutdown does not race it.
      await until(() => /INFO: request completed/.test(screen.replace(COLOURS, '')), 'the request completed line', 10_000).catch(() => {});
      // Ctrl-C, typed on that terminal: SIGINT to the primary and its workers.
      child.stdin!.write('\x03');
      assert.equal(await exited, 0, screen);
    } finally {
      child.kill('SIGKILL');
      keepOutput(`terminal-serve-${child.pid}`, screen);
    }

    assert.match(screen, /\x1b\[32mINFO\x1b\[39m/, 'levels are coloured');
    // Besides the log: Ctrl-C echoed (^C), and the banner of a first start, were this test run alone.
    const banner = /^(Coffer created tenant |Its management API key | {2}key_|The owner's sign-in link | {2}http:\/\/\S+\/signin\/link\?token=)/;
    const lines = screen.replace(COLOURS, '').replace(/\r\n/g, '\n').split('\n').filter((l) => l.trim() && l !== '^C' && !banner.test(l));
    assert.ok(!lines.some((l) => l.startsWith('{')), 'no JSON line');
    for (const line of lines) assert.match(line.replace(/^\^C/, ''), PRETTY);
    assert.ok(lines.some((l) => /INFO: coffer ready \{"workers":2,"url":"http:/.test(l)), 'the primary');
    for (const worker of [1, 2]) assert.ok(lines.some((l) => new RegExp(`INFO: worker ready \\{"worker":${worker},`).test(l)), `worker ${worker}`);
    assert.ok(lines.some((l) => /INFO: request completed 200 in \d+\.\d ms \(req [0-9a-f]{8}\) \{"worker":[12]\}$/.test(l)), 'a request, served by a worker');
  });
});
