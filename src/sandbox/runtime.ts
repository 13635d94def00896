/**
 * The JavaScript that runs inside every isolate before user code: the files under
 * ./runtime/, concatenated into one strict function `(H) => control`, called at once with
 * the host's message port, which the host sets as global `__coffer_port` just before (the
 * runtime deletes it). They are plain JavaScript (not TypeScript): V8 runs them as they are.
 */
import fs from 'node:fs';
import path from 'node:path';

const PARTS = ['prelude', 'intl', 'errors', 'encoding', 'clone-types', 'clone', 'url-host', 'url', 'search-params', 'crypto-random', 'crypto-keys', 'crypto-algorithms', 'crypto', 'console', 'timers', 'fetch', 'main'];

const dir = path.join(import.meta.dirname, 'runtime');

export const RUNTIME_SOURCE =
  `(function cofferRuntime(H) {\n'use strict';\n` +
  PARTS.map((p) => `// ---- ${p}.js\n${fs.readFileSync(path.join(dir, `${p}.js`), 'utf8')}`).join('\n') +
  `\n})(globalThis.__coffer_port)`;

/**
 * The user's CommonJS code as a script calling the runtime's start function. The wrapper's
 * head shares the code's first line so that line numbers in errors are the user's own.
 */
export const WRAPPER_HEAD = '__coffer_start(function (exports, require, module, __filename, __dirname) {';
export const WRAPPER_TAIL = '\n});';

export function wrapUserCode(code: string): string {
  return WRAPPER_HEAD + code + WRAPPER_TAIL;
}

export const USER_FILENAME = 'reactor.js';
