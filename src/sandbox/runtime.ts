/**
 * The JavaScript that runs inside every isolate before user code: the files under
 * ./runtime/, concatenated into one strict function `(H) => control`, called at once with
 * the host's message port, which the host sets as global `__coffer_port` just before (the
 * runtime deletes it). They are plain JavaScript (not TypeScript): V8 runs them as they are.
 */
import fs from 'node:fs';
import path from 'node:path';
import type ivm from 'isolated-vm';

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
 * Checks that `code` is a function body on its own, though the wrapped script compiled: code
 * that closes the wrapper (`}); …`) puts statements of its own at the script's top level, whose
 * completion value the host would otherwise receive. `new Function` refuses such a body: V8
 * requires the source it builds around the body to be that one function, nothing after it.
 * Compiles only: the function made is never called, so nothing of the code runs. It is made in
 * `context`, a context of an isolate (the write-time checker's, or the run's own).
 */
const CLOSES_WRAPPER_CHECK = 'void new Function(...$0)';

/** The SyntaxError's message when `code` closes the wrapper; throws when the isolate fails (it is dead, say). */
export async function closesWrapper(context: ivm.Context, code: string): Promise<string | undefined> {
  try {
    await context.evalClosure(CLOSES_WRAPPER_CHECK, [[...WRAPPER_PARAMS, code]], { arguments: { copy: true } });
    return undefined;
  } catch (err) {
    return closingMessage(err);
  }
}

/** closesWrapper, blocking until the isolate has parsed the code: for write-time checks, which are synchronous. */
export function closesWrapperSync(context: ivm.Context, code: string): string | undefined {
  try {
    context.evalClosureSync(CLOSES_WRAPPER_CHECK, [[...WRAPPER_PARAMS, code]], { arguments: { copy: true } });
    return undefined;
  } catch (err) {
    return closingMessage(err);
  }
}

/** The invalid_code detail for the check's SyntaxError; any other error is rethrown. */
function closingMessage(err: unknown): string {
  if (!(err instanceof Error) || err.name !== 'SyntaxError') throw err;
  // The Function constructor only says that its source is not one function; a parse of the
  // body alone stops at the brace that closes it, and that is the message the code's author needs.
  const message = err.message === 'Single function literal required' ? "Unexpected token '}'" : err.message;
  return `SyntaxError: ${message.replace(/^SyntaxError:\s*/, '')} (the code must be a module body: it may not close the function it is loaded in)`;
}
