/**
 * `npm test`: runs every test file against a real PostgreSQL — the one in DATABASE_URL
 * when set, otherwise an embedded server started here — then scans every log line the
 * servers under test wrote for the secrets the tests handled.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../src/db/embedded/start.ts';
import { scanLogs } from './helpers/log-scan.ts';

const root = path.resolve(import.meta.dirname, '..');
// Both 0700 from mkdtemp: the embedded server must cope with a DATA_DIR its OS user cannot enter yet.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-test-data-'));
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-test-logs-'));

const silent = pino({ level: 'warn' });
const external = process.env.DATABASE_URL;
const embedded = external ? undefined : await startEmbeddedPostgres(dataDir, silent, { takeOwnership: true });
const adminUrl = external ?? embedded!.url;
process.stdout.write(`tests run against ${external ? 'DATABASE_URL' : 'an embedded PostgreSQL'}\n`);

const files = process.argv.slice(2).length ? process.argv.slice(2) : ['test/**/*.test.ts'];
// Not spawnSync: this process must keep its event loop turning while the tests run, since it
// reads the embedded server's log. A blocked loop leaves that pipe undrained, and once it is
// full every PostgreSQL process that logs (the checkpointer, after each DROP DATABASE) blocks
// on its write, and the tests with it.
const child = spawn(process.execPath, ['--test', '--import', './test/helpers/exit-at-once.ts', '--test-concurrency=2', '--test-timeout=120000', ...files], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: '', COFFER_TEST_ADMIN_URL: adminUrl, COFFER_TEST_LOG_DIR: logDir },
});
const result = await new Promise<{ status: number | null }>((resolve, reject) => {
  child.on('error', reject);
  child.on('exit', (status) => resolve({ status }));
});

// A run that started servers must have logged and remembered something.
const leaks = scanLogs(logDir, result.status === 0 && fs.readdirSync(logDir).some((f) => f.endsWith('.log')));
await embedded?.release();
fs.rmSync(dataDir, { recursive: true, force: true });
fs.rmSync(logDir, { recursive: true, force: true });
process.exit(result.status === 0 && leaks === 0 ? 0 : 1);
