import type { SandboxFailure } from './types.ts';

const TITLES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Content Too Large',
  422: 'Unprocessable Content',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

export function failure(status: number, kind: SandboxFailure['kind'], detail: string, data?: unknown): SandboxFailure {
  const f: SandboxFailure = { status, title: TITLES[status] ?? (status >= 500 ? 'Internal Server Error' : 'Error'), detail, kind };
  if (data !== undefined) f.data = data;
  return f;
}

export const timeoutFailure = (ms: number) => failure(408, 'timeout', `The code did not finish within its time limit of ${ms} ms.`);

export const stuckFailure = () =>
  failure(408, 'timeout', 'The code is waiting for a promise that can never settle: nothing it waits on (timer, fetch or SDK call) is pending.');

export const memoryFailure = (mb: number) => failure(422, 'memory', `The code used more than its memory limit of ${mb} MB.`);

export const runtimeFailure = (detail = 'The code could not be run because of an internal error.') => failure(500, 'runtime', detail);

/** "SyntaxError: Unexpected token ';' [reactor.js:2:9]" → "SyntaxError: Unexpected token ';' (line 2, column 9)". */
export function syntaxFailure(message: string, headLength: number, lines: number): SandboxFailure {
  const m = /^(.*?)\s*\[[^\]]*?:(\d+):(\d+)\]\s*$/s.exec(message);
  if (!m) return failure(400, 'invalid_code', message.replace(/^(?!SyntaxError)/, 'SyntaxError: '));
  // An error found in the wrapper's closing line (an unclosed brace) belongs to the last line.
  const line = Math.min(Number(m[2]), lines);
  const column = line === 1 ? Math.max(1, Number(m[3]) - headLength) : Number(m[3]);
  const text = m[1].startsWith('SyntaxError') ? m[1] : `SyntaxError: ${m[1]}`;
  return failure(400, 'invalid_code', `${text} (line ${line}, column ${column})`);
}
