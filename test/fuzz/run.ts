/**
 * `npm run test:fuzz`: the hostile-input suite. Like test/run.ts it runs against the
 * PostgreSQL in DATABASE_URL or an embedded one started here, captures every log line of
 * the server under test and scans them for the secrets the run handled. The driver
 * (test/fuzz/fuzz.ts) runs in a child process, so a server that crashes is reported, not
 * lost with it. The last line is always `fuzz: requests=N routes=R server_errors=E`.
 *
 * FUZZ_RUNS (default 15, what CI runs): fast-check runs per category and route; FUZZ_SEED to replay;
 * FUZZ_SHRINK=0 to report failures unshrunk; FUZZ_ONLY to fuzz the routes matching a substring;
 * FUZZ_TIMEOUT_S to change the deadline (120 s + 20 s per run) after which a hung server is reported.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { startEmbeddedPostgres } from '../../src/db/embedded/start.ts';
import { scanLogs } from '../helpers/log-scan.ts';

const root = path.resolve(import.meta.dirname, '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-fuzz-data-'));
const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-fuzz-logs-'));
const summaryPath = path.join(dataDir, 'summary.json');

const external = process.env.DATABASE_URL;
const embedded = external ? undefined : await startEmbeddedPostgres(dataDir, pino({ level: 'warn' }), { takeOwnership: true });
process.stdout.write(`fuzz runs against ${external ? 'DATABASE_URL' : 'an embedded PostgreSQL'}\n`);

const started = Date.now();
// The server runs inside the driver: a request that blocks its event loop would hang the run, so it has a deadline.
const runs = Number(process.env.FUZZ_RUNS || 15);
const deadlineMs = Number(process.env.FUZZ_TIMEOUT_S || 120 + runs * 20) * 1000;
// Not spawnSync: this process reads the embedded server's log, and a blocked event loop would
// leave that pipe undrained until PostgreSQL itself blocked on it (see test/run.ts).
const driver = spawn(process.execPath, [path.join(root, 'test/fuzz/fuzz.ts')], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, DATABASE_URL: '', COFFER_TEST_ADMIN_URL: external ?? embedded!.url, COFFER_TEST_LOG_DIR: logDir, FUZZ_SUMMARY: summaryPath },
});
const child = await new Promise<{ status: number | null; signal: NodeJS.Signals | null; error?: Error }>((resolve) => {
  let timedOut: Error | undefined;
  const deadline = setTimeout(() => {
    timedOut = new Error('deadline');
    driver.kill('SIGKILL');
  }, deadlineMs);
  driver.on('error', (error) => {
    clearTimeout(deadline);
    resolve({ status: null, signal: null, error });
  });
  driver.on('exit', (status, signal) => {
    clearTimeout(deadline);
    resolve({ status, signal, error: timedOut });
  });
});

type Summary = { requests: number; routes: number; serverErrors: number };
const read = (file: string) => (fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : undefined);
const summary = read(summaryPath) as Summary | undefined;
// The driver notes each request before sending it: after a crash, that is the culprit and the count so far.
const inflight = read(`${summaryPath}.inflight`) as { requests: number; routes: number; request: string } | undefined;
if (!summary) {
  const why = child.error ? `no end within ${deadlineMs / 1000} s` : `exit ${child.status ?? child.signal}`;
  process.stderr.write(`the fuzz driver ended without a summary (${why}): the server under test crashed or hung\n`);
  if (inflight) process.stderr.write(`the request in flight: ${inflight.request}\n`);
}
// The fuzz run always starts a server, so an empty scan means the scan is broken.
const leaks = scanLogs(logDir, true);

await embedded?.release();
fs.rmSync(dataDir, { recursive: true, force: true });
if (!process.env.FUZZ_KEEP_LOGS) fs.rmSync(logDir, { recursive: true, force: true });

// A crash is a server error too: whatever the driver counted, plus one.
const serverErrors = (summary?.serverErrors ?? 0) + (summary ? 0 : 1);
process.stdout.write(`fuzz took ${Math.round((Date.now() - started) / 1000)} s\n`);
process.stdout.write(`fuzz: requests=${summary?.requests ?? inflight?.requests ?? 0} routes=${summary?.routes ?? inflight?.routes ?? 0} server_errors=${serverErrors}\n`);
process.exit(child.status === 0 && serverErrors === 0 && leaks === 0 ? 0 : 1);
