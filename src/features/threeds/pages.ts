import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { ApiError } from '../../http/errors.ts';
import type { ChallengeMessage, ChallengeView } from './browser.ts';
import { SessionParams } from './schema.ts';
import type { ThreeDSService } from './service.ts';

/**
 * The pages a cardholder's browser opens during 3DS, served with no API key: the simulated
 * ACS's 3DS Method page (in a hidden iframe) and challenge page (in an iframe or a popup), and
 * the session's notification endpoints they post back to. Plain HTML: the one script, which
 * submits a form on load and posts the challenge's outcome to the opener or parent, is a file
 * of its own (/3ds/pages.js), so the pages' Content-Security-Policy allows no inline script.
 * They may be framed by any site (the web SDKs frame them); forms post only to Coffer.
 */

export const PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; base-uri 'none'";

/** Submits `form[data-autosubmit]` at once (its button is for browsers without script), and tells the web SDK a challenge's outcome. */
export const PAGE_SCRIPT = `(function () {
  var form = document.querySelector('form[data-autosubmit]');
  if (form) {
    var manual = form.querySelector('[data-manual]');
    if (manual) manual.hidden = true;
    HTMLFormElement.prototype.submit.call(form);
  }
  var data = document.body.dataset;
  if (data.challengeId) {
    var message = { type: 'challenge', id: data.challengeId, isCompleted: data.completed === 'true', authenticationStatus: data.status };
    var target = window.opener || (window.parent !== window ? window.parent : null);
    if (target) target.postMessage(message, '*');
  }
})();
`;

const STYLE = `
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1b1f24; margin: 0; padding: 16px; }
main { max-width: 420px; margin: 0 auto; }
h1 { font-size: 18px; margin: 0 0 8px; }
.issuer { color: #57606a; font-size: 13px; margin: 0 0 16px; }
.test { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 4px; padding: 6px 10px; font-size: 13px; }
.problem { color: #cf222e; }
label { display: block; margin: 12px 0 4px; }
input[type=text] { font-size: 18px; letter-spacing: 4px; padding: 6px 8px; width: 10ch; }
button { font-size: 15px; padding: 6px 14px; margin: 12px 8px 0 0; cursor: pointer; }
form.inline { display: inline; }
`;

export const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** A page in the style of the cardholder pages (also the transactions' approval page). */
export function page(title: string, body: string, opts: { script?: string; bodyData?: Record<string, string> } = {}): string {
  const data = Object.entries(opts.bodyData ?? {}).map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`).join('');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body${data}>
<main>
${body}
</main>${opts.script ? `\n<script src="${escapeHtml(opts.script)}"></script>` : ''}
</body>
</html>
`;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`;

/** A form that posts itself on load (the page's script), with a button for browsers that run none. */
function autoPost(action: string, fields: Record<string, string>, label: string): string {
  return `<form method="post" action="${escapeHtml(action)}" data-autosubmit>
${Object.entries(fields).map(([k, v]) => hidden(k, v)).join('\n')}
<button type="submit" data-manual>${escapeHtml(label)}</button>
</form>`;
}

/** The 3DS Method page: the simulated ACS "fingerprints" nothing, and reports completion to the session's notification URL. */
export function methodPage(notificationUrl: string, completion: string, script: string): string {
  return page('3DS Method', `<p>Checking your browser…</p>\n${autoPost(notificationUrl, { threeDSMethodData: completion }, 'Continue')}`, { script });
}

export function challengePage(view: ChallengeView, action: string, script: string): string {
  if (view.kind === 'completed') {
    return page('Authentication complete', `<h1>Authentication complete</h1>\n${autoPost(view.notificationUrl, { cres: view.cres }, 'Continue')}`, { script });
  }
  const header = '<h1>Confirm your payment</h1>\n<p class="issuer">Your card issuer (Coffer test ACS, simulated)</p>';
  if (view.kind === 'decoupled') {
    return page('Confirm your payment', `${header}\n<p>Your bank is confirming this payment with you directly. You can close this window.</p>`);
  }
  const { prompt } = view;
  const creq = hidden('creq', view.creq);
  const parts = [header];
  if (view.problem) parts.push(`<p class="problem" role="alert">${escapeHtml(view.problem)}</p>`);
  if (prompt.type === 'out-of-band') {
    parts.push(`<p>Open your banking app and approve this payment there, then continue.</p>
<form method="post" action="${escapeHtml(action)}" class="inline">${creq}<button type="submit" name="action" value="approve">I approved it in my banking app</button></form>`);
  } else {
    parts.push(`<p>Enter the one-time code we sent you.${prompt.attempts_remaining < 3 ? ` ${prompt.attempts_remaining} attempt${prompt.attempts_remaining === 1 ? '' : 's'} left.` : ''}</p>`);
    if (prompt.test_code) parts.push(`<p class="test">Test card: the code is <strong id="test-code">${escapeHtml(prompt.test_code)}</strong></p>`);
    parts.push(`<form method="post" action="${escapeHtml(action)}" class="inline">${creq}
<label for="code">One-time code</label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" maxlength="12" required autofocus>
<br><button type="submit" name="action" value="submit">Submit</button></form>`);
  }
  if (prompt.can_cancel) {
    parts.push(`<form method="post" action="${escapeHtml(action)}" class="inline">${creq}<button type="submit" name="action" value="cancel">Cancel</button></form>`);
  }
  return page('Confirm your payment', parts.join('\n'));
}

/** The session's notification page: it hands the outcome to the web SDK (opener or parent) with postMessage. */
export function notificationPage(message: ChallengeMessage, script: string): string {
  return page('Authentication complete', `<p>Authentication ${escapeHtml(message.authenticationStatus)}. You can close this window.</p>`, {
    script,
    bodyData: { 'challenge-id': message.id, completed: String(message.isCompleted), status: message.authenticationStatus },
  });
}

function sendPage(reply: FastifyReply, html: string): FastifyReply {
  return reply
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', PAGE_CSP)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .send(html);
}

/** Form fields are short: a CReq or Method data is a few hundred bytes. */
const FORM_LIMIT = 16 * 1024;
const Field = Type.String({ maxLength: 8192 });
const MethodForm = Type.Object({ threeDSMethodData: Field }, { additionalProperties: true });
const ChallengeForm = Type.Object({
  creq: Field,
  action: Type.Optional(Type.String({ maxLength: 20 })),
  code: Type.Optional(Type.String({ maxLength: 40 })),
}, { additionalProperties: true });
const NotificationForm = Type.Object({ threeDSMethodData: Type.Optional(Field), cres: Type.Optional(Field) }, { additionalProperties: true });

const page_ = { config: { access: 'public' as const }, schema: { hide: true } };

export function registerThreeDSPages(app: FastifyInstance, threeds: ThreeDSService, publicUrl: () => string): void {
  const script = () => `${publicUrl()}/3ds/pages.js`;
  app.register(async (scope) => {
    // The pages take HTML forms: application/x-www-form-urlencoded, a field given twice counts once (its last).
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();

    r.get('/3ds/pages.js', page_, async (_request, reply) =>
      reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(PAGE_SCRIPT));

    const method = async (data: string, reply: FastifyReply) => {
      const { notificationUrl, completion } = await threeds.methodPage(data);
      return sendPage(reply, methodPage(notificationUrl, completion, script()));
    };
    r.get('/3ds/acs/method', { ...page_, schema: { hide: true, querystring: MethodForm } }, async (request, reply) => method(request.query.threeDSMethodData, reply));
    r.post('/3ds/acs/method', { ...page_, schema: { hide: true, body: MethodForm } }, async (request, reply) => method(request.body.threeDSMethodData, reply));

    r.post('/3ds/sessions/:id/method-notification', { ...page_, schema: { hide: true, params: SessionParams, body: NotificationForm } }, async (request, reply) => {
      await threeds.methodNotification(request.params.id, request.body.threeDSMethodData);
      return sendPage(reply, page('3DS Method', '<p>Done.</p>'));
    });

    r.post('/3ds/acs/challenge', { ...page_, schema: { hide: true, body: ChallengeForm } }, async (request, reply) => {
      const view = await threeds.challengePage(request.body);
      return sendPage(reply, challengePage(view, `${publicUrl()}/3ds/acs/challenge`, script()));
    });

    r.post('/3ds/sessions/:id/challenge-notification', { ...page_, schema: { hide: true, params: SessionParams, body: NotificationForm } }, async (request, reply) => {
      if (request.body.cres === undefined) throw ApiError.field('body.cres', 'is required');
      return sendPage(reply, notificationPage(await threeds.challengeNotification(request.params.id, request.body.cres), script()));
    });
  });
}
