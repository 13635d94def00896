import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { rememberSecret } from './server.ts';

const root = path.resolve(import.meta.dirname, '../..');

function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  // The format follows from the test's own settings (and a pipe's default, JSON), not the shell's.
  delete base.LOG_FORMAT;
  return { ...base, LOG_LEVEL: 'info', ...env };
}

/** What announceFirstKey (src/cluster.ts) writes: the management key of a first start, shown once on purpose. */
const FIRST_KEY_BANNER = /^Coffer created tenant \S+ on this first start\.\nIts management API key \(shown only now; send it as SVC-API-KEY\):\n\n {2}\S+\n\nThe owner's sign-in link \(works once, for SIGNIN_LINK_MINUTES; `coffer signin-link` makes another\):\n\n {2}\S+\n/gm;

/**
 * Adds what a child wrote to a terminal's worth of output (stderr, where one-shot commands log,
 * or a pseudo-terminal's whole screen) to the final scan for leaked secrets: its log lines in
 * whichever format (JSON or pretty) and every other line (messages, warnings), all but the
 * first-start banner. Were the banner's text to change, it would no longer be recognised
 * here and its key would count as a leak: the scan fails rather than looks away.
 */
export function keepOutput(name: string, text: string): void {
  const rest = text.replace(/\r\n/g, '\n').replace(FIRST_KEY_BANNER, '');
  if (rest.trim()) keepLog(name, rest);
}

/** Adds `text`, all of it log, to the final scan. */
function keepLog(name: string, text: string): void {
  const logDir = process.env.COFFER_TEST_LOG_DIR;
  if (logDir) fs.writeFileSync(path.join(logDir, `${name}.log`), text);
}

/** Where the commands run: this checkout, unless a test made a copy of it elsewhere. */
type Where = { cwd?: string };

/** Runs `coffer <args>` to completion. */
export function runCli(args: string[], env: Record<string, string>, where: Where = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['src/cli.ts', ...args], { cwd: where.cwd ?? root, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      keepOutput(`cli-${args[0] ?? 'none'}-${child.pid}`, stderr);
      resolve({ code, stdout, stderr });
    });
  });
}

const children = new Set<ChildProcess>();

/** Kills every server a test file started and did not stop (a failed assertion must not hang the run). */
export function killServed(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
}

export type Served = { child: ChildProcess; url: string; firstKey: string | undefined; stdout(): string; stderr(): string; stop(): Promise<number | null> };

/** Starts `coffer serve [args]` on a free port and waits until it listens (and, on a first start, printed its key). */
export function serve(env: Record<string, string>, args: string[] = [], where: Where = {}): Promise<Served> {
  const child = spawn(process.execPath, ['src/cli.ts', 'serve', ...args], { cwd: where.cwd ?? root, env: childEnv({ PORT: '0', ...env }) });
  children.add(child);
  let stdout = '';
  let stderr = '';
  const exited = new Promise<number | null>((r) =>
    child.on('close', (code) => {
      children.delete(child);
      // The child's log stream joins the others in the final scan for leaked secrets.
      keepLog(`serve-${child.pid}`, stdout);
      keepOutput(`serve-${child.pid}-stderr`, stderr);
      r(code);
    }),
  );
  const keyLine = /^ {2}(key_\S+)$/m;
  // "coffer ready" says whether a first-start key was printed; stderr may arrive after stdout.
  // As a JSON line, or (LOG_FORMAT=pretty) as a readable one: `[…] INFO: coffer ready {"url":…,"first_start":…}`.
  const readyLines = [
    /"url":"(http:\/\/127\.0\.0\.1:\d+)","first_start":(true|false),"msg":"coffer ready"/,
    /INFO: coffer ready \{[^\n]*"url":"(http:\/\/127\.0\.0\.1:\d+)","first_start":(true|false)\}/,
  ];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`serve did not start:\n${stdout}\n${stderr}`));
    }, 60_000);
    let done = false;
    const check = () => {
      const m = readyLines.map((line) => line.exec(stdout)).find(Boolean);
      if (done || !m || (m[2] === 'true' && !keyLine.test(stderr))) return;
      done = true;
      clearTimeout(timer);
      const key = keyLine.exec(stderr)?.[1];
      if (key) rememberSecret(key);
      resolve({
        child,
        url: m[1],
        firstKey: key,
        stdout: () => stdout,
        stderr: () => stderr,
        async stop() {
          child.kill('SIGTERM');
          return exited;
        },
      });
    };
    child.stderr!.on('data', (d) => {
      stderr += d;
      check();
    });
    child.stdout!.on('data', (d) => {
      stdout += d;
      check();
    });
    exited.then((code) => {
      clearTimeout(timer);
      if (!done) reject(new Error(`serve exited with ${code}:\n${stdout}\n${stderr}`));
    });
  });
}

/** The pid in DATA_DIR's postmaster.pid: the embedded PostgreSQL's, or undefined when there is none. */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(fs.readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
