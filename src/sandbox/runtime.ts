/**
 * The JavaScript that runs inside every isolate before user code: the files under
 * ./runtime/, concatenated into one strict function `(H) => control`, called at once with
 * the host's message port, which the host sets as global `__coffer_port` just before (the
 * runtime deletes it). They are plain JavaScript (not TypeScript): V8 runs them as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';

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

const WRAPPER_PARAMS = ['exports', 'require', 'module', '__filename', '__dirname'];

/**
 * The SyntaxError's message when `code` is not a function body on its own, though the wrapped
 * script compiled: the code closes the wrapper (`}); …`) to put statements of its own at the
 * script's top level, whose completion value the host would otherwise receive. V8 parses the
 * body apart from its parameters here, so no text can close it. Compiles only: nothing runs.
 */
export function closesWrapper(code: string): string | undefined {
  try {
    vm.compileFunction(code, WRAPPER_PARAMS, { filename: USER_FILENAME });
    return undefined;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return `SyntaxError: ${message.replace(/^SyntaxError:\s*/, '')} (the code must be a module body: it may not close the function it is loaded in)`;
  }
}
