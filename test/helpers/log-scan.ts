import fs from 'node:fs';
import path from 'node:path';

/** Terminal colours (pretty logs on a terminal): a secret split by one would still be a leak. */
const COLOURS = /\x1b\[[0-9;]*m/g;

/** Where the scan reports: its summary to stdout, each leak and a broken scan to stderr. */
function toConsole(text: string, problem: boolean): void {
  (problem ? process.stderr : process.stdout).write(text);
}

/**
 * Every secret a run handled (API and session keys, nonces, token data, configuration),
 * remembered in `secrets-*` files, must be absent from every line of every `*.log` in dir,
 * whatever their format (JSON lines, or LOG_FORMAT=pretty lines, coloured or not).
 * Returns the number of leaks; a run that must have logged (`expectLogs`) but shows no
 * lines or no secrets counts as a failure too, since such a scan proves nothing.
 */
export function scanLogs(dir: string, expectLogs: boolean, report: (text: string, problem: boolean) => void = toConsole): number {
  const files = fs.readdirSync(dir);
  const secrets = new Set(
    files.filter((f) => f.startsWith('secrets-')).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)),
  );
  const logs = files.filter((f) => f.endsWith('.log'));
  let lines = 0;
  let leaks = 0;
  for (const f of logs) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').replace(COLOURS, '').split(/\r?\n/)) {
      if (!line) continue;
      lines++;
      for (const s of secrets) {
        if (line.includes(s)) {
          leaks++;
          report(`secret found in log ${f}: ${line.slice(0, 200)}\n`, true);
        }
      }
    }
  }
  report(`log scan: ${lines} lines from ${logs.length} log files (servers and CLI runs) checked for ${secrets.size} secrets, ${leaks} leaks\n`, false);
  if (expectLogs && (lines === 0 || secrets.size === 0)) {
    report('log scan saw no log lines or no secrets: the scan itself is broken\n', true);
    return leaks + 1;
  }
  return leaks;
}
