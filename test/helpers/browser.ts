import { execFileSync } from 'node:child_process';
import { chromium, type Browser } from 'playwright-core';

/**
 * The machine's Chromium (Debian's `chromium` package; .ci/run installs it when missing),
 * driven by playwright-core, which downloads no browser of its own. A machine without it fails
 * the test that asked, saying so: a browser test is never skipped.
 */
export function chromiumPath(): string {
  let found = '';
  try {
    found = execFileSync('/bin/sh', ['-c', 'command -v chromium'], { encoding: 'utf8' }).trim();
  } catch {
    // `command -v` exits 1 when there is none.
  }
  if (!found) {
    throw new Error('no `chromium` on PATH: the browser tests need it (apt-get update && apt-get install -y chromium; .ci/run does this)');
  }
  return found;
}

/** A headless Chromium that reaches out to nothing by itself (no update checks, no background requests). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
  });
}
