import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errorHandler, toApiError, unexpectedError, type ApiError } from '../http/errors.ts';

/**
 * Pages people open from an e-mail (invitation acceptance, sign-in): plain HTML that works
 * without JavaScript and reads on a phone. No script at all, so the CSP allows none; forms
 * post only to Coffer; no page may be framed (a framed button could be clicked by trickery).
 */
export const PEOPLE_PAGE_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const STYLE = `
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #f6f8fa; margin: 0; padding: 16px; }
main { max-width: 440px; margin: 24px auto; background: #fff; border: 1px solid #d1d9e0; border-radius: 8px; padding: 24px; }
h1 { font-size: 22px; line-height: 1.3; margin: 0 0 12px; }
p { margin: 0 0 14px; }
.muted { color: #59636e; font-size: 14px; }
.problem { color: #cf222e; }
label { display: block; margin: 14px 0 4px; font-weight: 600; }
input[type=text] { box-sizing: border-box; width: 100%; font-size: 16px; padding: 10px; border: 1px solid #d1d9e0; border-radius: 6px; }
button { margin-top: 20px; width: 100%; font-size: 16px; font-weight: 600; padding: 12px; border: 0; border-radius: 6px; background: #0b57d0; color: #fff; cursor: pointer; }
`;

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

export function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
}

export function sendPage(reply: FastifyReply, status: number, html: string): FastifyReply {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', PEOPLE_PAGE_CSP)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .send(html);
}

/**
 * Whether the request is a person's, answered with a page rather than JSON. Only routes kept
 * out of the API reference (`hide`) ever answer pages: the GET of a page, and a POST from a
 * browser (a form's submission, or a request asking for HTML). Every route in the reference
 * answers JSON and problem details, whatever the request asks for.
 */
export function wantsPage(request: FastifyRequest): boolean {
  if ((request.routeOptions.schema as { hide?: boolean } | undefined)?.hide !== true) return false;
  if (request.method === 'GET') return true;
  return (request.headers['content-type'] ?? '').toLowerCase().startsWith('application/x-www-form-urlencoded') || /\btext\/html\b/i.test(request.headers.accept ?? '');
}

const FORM_LIMIT = 8 * 1024;

/**
 * The scope of a group of people's pages: HTML forms parsed (a field given twice counts once,
 * its last), and errors answered as a page for page requests, as problem details otherwise.
 * `errorPage` renders an error as the page shows it.
 */
export function pageScope(scope: FastifyInstance, errorPage: (error: ApiError, original: unknown) => string): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  scope.setErrorHandler((err: FastifyError, request, reply) => {
    if (!wantsPage(request)) return errorHandler(err, request, reply);
    const error = toApiError(err, request) ?? unexpectedError(err, request.log);
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds));
    return sendPage(reply, error.status, errorPage(error, err));
  });
}
