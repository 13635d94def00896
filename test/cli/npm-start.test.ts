import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { alive } from '../helpers/cli.ts';
import { createTestDatabase, rememberSecret } from '../helpers/server.ts';

/**
 * `npm start`, as README's quick start runs it: a process manager's SIGTERM to npm, and a
 * terminal's Ctrl-C (SIGINT to the whole foreground process group), stop Coffer cleanly.
 * npm forwards both signals to the process it started; that must be Coffer itself, not a
 * shell that dies and leaves Coffer running; and Coffer must take the terminal's Ctrl-C and
 * npm's copy of it, arriving together, as one Ctrl-C, not as the second that ends it at once.
 */

const root = path.resolve(import.meta.dirname, '../..');
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-npm-start-'));
const started: { child: ChildProcess; coffer: number | undefined }[] = [];
const cleanup: (() => Promise<void>)[] = [];
after(async () => {
  for (const { child, coffer } of started) {
    for (const pid of [coffer, child.pid]) {
      if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    }
  }
  for (const fn of cleanup) await fn();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** `npm start` in a process group of its own (as in a terminal), ready to serve. */
async function npmStart(databaseUrl: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: databaseUrl, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'info' };
  for (const name of Object.keys(env)) if (name.startsWith('npm_')) delete env[name];
  delete env.LOG_FORMAT; // JSON lines (stdout is a pipe), read below
  delete env.MALLOC_ARENA_MAX; // npm start's own default, checked below
  const child = spawn('npm', ['start'], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const entry: { child: ChildProcess; coffer: number | undefined } = { child, coffer: undefined };
  started.push(entry);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => {
    stderr += d;
    for (const key of String(d).match(/key_\S+/g) ?? []) rememberSecret(key);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
  // Coffer's log stream joins the others in the final scan for leaked secrets.
  child.on('close', () => {
    const logDir = process.env.COFFER_TEST_LOG_DIR;
    if (logDir) fs.writeFileSync(path.join(logDir, `npm-start-${child.pid}.log`), stdout);
  });
  const end = Date.now() + 60_000;
  let ready: RegExpExecArray | null = null;
  while (!(ready = /"pid":(\d+),[^\n]*"msg":"coffer ready"/.exec(stdout))) {
    if (Date.now() > end || child.exitCode !== null) throw new Error(`npm start did not start:\n${stdout}\n${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  entry.coffer = Number(ready[1]);
  return { child, coffer: entry.coffer, exited, stdout: () => stdout };
}

async function gone(pid: number, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

describe('npm start', () => {
  it('stops on SIGTERM to npm: npm forwards it to Coffer, which shuts down and exits 0', async () => {
    const database = await createTestDatabase();
    cleanup.push(database.drop);
    const run = await npmStart(database.url);
    // npm start bounds glibc's malloc arenas (docs/operations.md, "Memory") unless the environment sets them.
    assert.ok(fs.readFileSync(`/proc/${run.coffer}/environ`, 'utf8').split('\0').includes('MALLOC_ARENA_MAX=2'));
    process.kill(run.child.pid!, 'SIGTERM');
    assert.deepEqual(await run.exited, { code: 0, signal: null });
    assert.ok(await gone(run.coffer, 15_000), `Coffer (pid ${run.coffer}) is still running after npm exited`);
    assert.match(run.stdout(), /"signal":"SIGTERM","msg":"shutting down"/);
  });

  it('stops gracefully on Ctrl-C (SIGINT to the process group), although npm forwards it a second time', async () => {
    const database = await createTestDatabase();
    cleanup.push(database.drop);
    const run = await npmStart(database.url);
    process.kill(-run.child.pid!, 'SIGINT');
    const exit = await run.exited;
    assert.ok(await gone(run.coffer, 15_000), `Coffer (pid ${run.coffer}) is still running after npm exited`);
    assert.match(run.stdout(), /"signal":"SIGINT","msg":"shutting down"/);
    // Ended at once by a second SIGINT, Coffer would exit by the signal and npm with it.
    assert.deepEqual(exit, { code: 0, signal: null });
  });
});
