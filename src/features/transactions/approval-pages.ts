import type { FastifyInstance, FastifyReply } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { escapeHtml, page } from '../threeds/pages.ts';
import { ApprovalNotFinished, ApprovalUnavailable, type ApprovalStep } from './approval.ts';
import type { TransactionService } from './service.ts';

/**
 * The buyer's approval pages (docs/orchestration.md, "Buyer approval"): plain HTML that works
 * without JavaScript; the one script (a file, so the CSP allows no inline script) posts the CReq
 * into the challenge frame on load and continues once the frame reports the challenge done.
 */
const APPROVAL_SCRIPT = `(function () {
  var creq = document.querySelector('form[data-challenge]');
  if (creq) {
    HTMLFormElement.prototype.submit.call(creq);
    var manual = creq.querySelector('[data-manual]');
    if (manual) manual.hidden = true;
  }
  window.addEventListener('message', function (event) {
    if (event.origin !== window.location.origin || !event.data || event.data.type !== 'challenge') return;
    var next = document.querySelector('form[data-continue]');
    if (next) HTMLFormElement.prototype.submit.call(next);
  });
})();
`;

const Params = Type.Object({ id: Type.String({ format: 'uuid' }) });
const Query = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) });
const Form = Type.Object({ token: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: true });
const StartForm = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 100 }),
  name: Type.Optional(Type.String({ maxLength: 200 })),
  email: Type.Optional(Type.String({ maxLength: 254 })),
}, { additionalProperties: true });
/** A deliberately plain check: the issuer's e-mail field takes what a person types; Coffer refuses only the obviously wrong. */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const hidden = { config: { access: 'public' as const }, schema: { hide: true } };

function money(amount: number, currency: string): string {
  return `${currency} ${(amount / 100).toFixed(2)}`;
}

function send(reply: FastifyReply, html: string, status = 200, frameOrigin?: string): FastifyReply {
  const frames = frameOrigin ? ` ${frameOrigin}` : '';
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('content-security-policy', `default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; frame-src 'self'${frames}; form-action 'self'${frames}; base-uri 'none'; frame-ancestors 'none'`)
    .header('cache-control', 'no-store')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .send(html);
}

function summary(step: ApprovalStep): string {
  const t = step.transaction;
  return `<p>${escapeHtml(money(t.amount, t.currency))} · card ending ${escapeHtml(t.payment_method.last4)}</p>`;
}

function form(action: string, token: string, label: string, attrs = ''): string {
  return `<form method="post" action="${escapeHtml(action)}"${attrs}><input type="hidden" name="token" value="${escapeHtml(token)}"><button type="submit">${escapeHtml(label)}</button></form>`;
}

function render(step: ApprovalStep, base: string, token: string, script: string): { html: string; frameOrigin?: string } {
  if (step.kind === 'confirm') {
    const problem = step.problem ? `<p class="problem" role="alert">${escapeHtml(step.problem)}</p>\n` : '';
    const fields = `<form method="post" action="${escapeHtml(`${base}/start`)}"><input type="hidden" name="token" value="${escapeHtml(token)}">
<label for="name">Name on the card</label><input type="text" id="name" name="name" autocomplete="cc-name" maxlength="200" required style="letter-spacing:normal;width:100%;box-sizing:border-box">
<label for="email">E-mail address</label><input type="email" id="email" name="email" autocomplete="email" maxlength="254" required style="font-size:16px;padding:6px 8px;width:100%;box-sizing:border-box">
<button type="submit">Continue to your bank</button></form>`;
    return { html: page('Approve your payment', `<h1>Approve your payment</h1>\n${summary(step)}\n${problem}<p>Your bank asks you to confirm this payment. It needs your name and e-mail address.</p>\n${fields}`) };
  }
  if (step.kind === 'challenge') {
    const frame = `<iframe name="acs" title="Your bank" style="width:100%;height:420px;border:1px solid #d0d7de;border-radius:4px"></iframe>`;
    const creq = `<form method="post" action="${escapeHtml(step.acsUrl)}" target="acs" data-challenge><input type="hidden" name="creq" value="${escapeHtml(step.creq)}"><button type="submit" data-manual>Open your bank's page</button></form>`;
    const next = form(`${base}/complete`, token, 'Continue once your bank has confirmed', ' data-continue');
    return {
      html: page('Confirm with your bank', `<h1>Confirm with your bank</h1>\n${summary(step)}\n${creq}\n${frame}\n${next}`, { script }),
      frameOrigin: new URL(step.acsUrl).origin,
    };
  }
  const t = step.transaction;
  const approved = ['authorization_succeeded', 'capture_succeeded', 'capture_pending'].includes(t.status);
  const text = approved
    ? '<h1>Payment approved</h1>\n<p>Thank you: your payment is confirmed. You can close this window.</p>'
    : `<h1>Payment not approved</h1>\n<p>Your payment could not be completed${t.error_code ? ` (${escapeHtml(t.error_code.replace(/_/g, ' '))})` : ''}. Return to the merchant to try again.</p>`;
  return { html: page(approved ? 'Payment approved' : 'Payment not approved', `${text}\n${summary(step)}`, { bodyData: { status: t.status } }) };
}

export function registerApprovalPages(app: FastifyInstance, transactions: TransactionService, publicUrl: () => string): void {
  app.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)));
    });
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();
    const base = (id: string) => `${publicUrl()}/orchestration/approvals/${id}`;
    const script = () => `${publicUrl()}/orchestration/approvals.js`;

    const answer = async (reply: FastifyReply, id: string, token: string, step: () => Promise<ApprovalStep>, status = 200) => {
      try {
        const { html, frameOrigin } = render(await step(), base(id), token, script());
        return send(reply, html, status, frameOrigin);
      } catch (err) {
        if (err instanceof ApprovalNotFinished) {
          return send(reply, page('Not confirmed yet', `<h1>Not confirmed yet</h1>\n<p>${escapeHtml(err.message)}</p>\n${form(`${base(id)}/complete`, token, 'Continue')}`), 409);
        }
        if (err instanceof ApprovalUnavailable) return send(reply, page('Approval unavailable', `<h1>Approval unavailable</h1>\n<p>${escapeHtml(err.message)}</p>`), 410);
        throw err;
      }
    };

    r.get('/orchestration/approvals.js', hidden, async (_request, reply) =>
      reply.header('content-type', 'text/javascript; charset=utf-8').header('cache-control', 'public, max-age=3600').header('x-content-type-options', 'nosniff').send(APPROVAL_SCRIPT));
    r.get('/orchestration/approvals/:id', { ...hidden, schema: { hide: true, params: Params, querystring: Query } }, async (request, reply) =>
      answer(reply, request.params.id, request.query.token, () => transactions.approvals.show(request.params.id, request.query.token)));
    r.post('/orchestration/approvals/:id/start', { ...hidden, schema: { hide: true, params: Params, body: StartForm } }, async (request, reply) => {
      const { id } = request.params;
      const { token } = request.body;
      const name = request.body.name?.trim() ?? '';
      const email = request.body.email?.trim() ?? '';
      if (!name || !EMAIL.test(email)) {
        return answer(reply, id, token, async () => ({
          ...(await transactions.approvals.show(id, token)),
          problem: !name ? 'Enter the name on your card.' : 'Enter a valid e-mail address.',
        }), 400);
      }
      return answer(reply, id, token, () => transactions.approvals.start(id, token, { name, email }));
    });
    r.post('/orchestration/approvals/:id/complete', { ...hidden, schema: { hide: true, params: Params, body: Form } }, async (request, reply) =>
      answer(reply, request.params.id, request.body.token, () => transactions.approvals.complete(request.params.id, request.body.token)));
  });
}
