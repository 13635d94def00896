import fs from 'node:fs';
import path from 'node:path';

/**
 * Every secret a run handled (API and session keys, nonces, token data, configuration),
 * remembered in `secrets-*` files, must be absent from every line of every `*.log` in dir.
 * Returns the number of leaks; a run that must have logged (`expectLogs`) but shows no
 * lines or no secrets counts as a failure too, since such a scan proves nothing.
 */
export function scanLogs(dir: string, expectLogs: boolean): number {
  const files = fs.readdirSync(dir);
  const secrets = new Set(
    files.filter((f) => f.startsWith('secrets-')).flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n').filter(Boolean)),
  );
  const logs = files.filter((f) => f.endsWith('.log'));
  let lines = 0;
  let leaks = 0;
  for (const f of logs) {
    for (const line of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!line) continue;
      lines++;
      for (const s of secrets) {
        if (line.includes(s)) {
          leaks++;
          process.stderr.write(`secret found in log ${f}: ${line.slice(0, 200)}\n`);
        }
      }
    }
  }
  process.stdout.write(`log scan: ${lines} lines from ${logs.length} log files (servers and CLI runs) checked for ${secrets.size} secrets, ${leaks} leaks\n`);
  if (expectLogs && (lines === 0 || secrets.size === 0)) {
    process.stderr.write('log scan saw no log lines or no secrets: the scan itself is broken\n');
    return leaks + 1;
  }
  return leaks;
}
