import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError } from '../../http/errors.ts';
import type { TokenBuckets } from '../../http/rate-limit.ts';
import { problem } from '../../http/schemas.ts';
import { escapeHtml, page, pageScope, sendPage, wantsPage } from '../../pages/layout.ts';
import { presentMember, type MemberService } from '../members/service.ts';
import { MemberSchema } from '../members/schema.ts';
import { secureCookies, setSessionCookies } from '../signin/cookies.ts';
import { AcceptanceRefused, type Acceptance, type AcceptView } from './accept.ts';
import { humanTime, ROLE_TEXT, sentenceStart } from './mail.ts';
import { AcceptBody, AcceptQuery } from './schema.ts';

const GONE_TITLE: Record<string, string> = {
  expired: 'This invitation has expired',
  resent: 'A newer invitation was sent',
  deleted: 'This invitation was withdrawn',
};

function refusedPage(view: Exclude<AcceptView, { state: 'ready' }>): string {
  switch (view.state) {
    case 'unknown':
      return page('Invitation link not valid', '<h1>This link is not valid</h1>\n<p>Check that the whole link from the e-mail was opened, or ask whoever invited you to send the invitation again.</p>');
    case 'used':
      return page('Invitation accepted already', `<h1>You have accepted this invitation already</h1>\n<p>You are a member of ${escapeHtml(view.tenantName)}. Sign in to continue.</p>`);
    case 'gone': {
      const why = {
        expired: 'The invitation expired before it was accepted.',
        resent: 'The invitation was sent again, so this older link no longer works: use the link in the newest e-mail.',
        deleted: 'The invitation was withdrawn.',
      }[view.reason];
      return page(GONE_TITLE[view.reason], `<h1>${escapeHtml(GONE_TITLE[view.reason])}</h1>
<p>${escapeHtml(why)}</p>
<p>To join ${escapeHtml(view.tenantName)}, ask ${escapeHtml(view.inviter)} to invite you again.</p>`);
    }
  }
}

function acceptPage(token: string, view: Extract<AcceptView, { state: 'ready' }>): string {
  return page(`Join ${view.tenantName}`, `<h1>Join ${escapeHtml(view.tenantName)}</h1>
<p>${escapeHtml(sentenceStart(view.inviter))} invited you (${escapeHtml(view.email)}) to join the tenant <strong>${escapeHtml(view.tenantName)}</strong> on Coffer as ${escapeHtml(ROLE_TEXT[view.role] ?? view.role)}.</p>
<form method="post" action="accept">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<label for="first_name">First name</label>
<input type="text" id="first_name" name="first_name" autocomplete="given-name" maxlength="100" required>
<label for="last_name">Last name</label>
<input type="text" id="last_name" name="last_name" autocomplete="family-name" maxlength="100" required>
<button type="submit">Accept and join</button>
</form>
<p class="muted">The invitation expires on ${escapeHtml(humanTime(view.expiresAt))}.</p>`);
}

function welcomePage(tenantName: string): string {
  return page(`Welcome to ${tenantName}`, `<h1 id="signed-in">Welcome to ${escapeHtml(tenantName)}</h1>
<p>You are a member now, and signed in on this browser.</p>
<p><a id="open-console" href="../console/">Open the console</a> · <a href="../me">Your account</a> · <a href="../docs">API reference</a></p>`);
}

/** An error as the acceptance pages show it. */
function errorPage(error: ApiError, original: unknown): string {
  if (original instanceof AcceptanceRefused) return refusedPage(original.view);
  const title = error.status === 429 ? 'Too many attempts' : 'Something went wrong';
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p class="problem">${escapeHtml(error.detail)}</p>`);
}

/** The acceptance page (no API key) and its form's POST, limited per client address. */
export function registerInvitationPages(app: FastifyInstance, deps: { acceptance: Acceptance; members: MemberService; limiter: TokenBuckets; publicUrl: () => string }): void {
  const { acceptance, members, limiter } = deps;
  const limit = (request: FastifyRequest) => {
    const wait = limiter.take(`people:${request.ip}`);
    if (wait > 0) {
      const e = new ApiError(429, 'Too many attempts from this address: wait a minute and try again.');
      e.retryAfterSeconds = wait;
      throw e;
    }
  };
  app.register(async (scope) => {
    pageScope(scope, errorPage);
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();

    r.get('/invitations/accept', { config: { access: 'public' }, schema: { hide: true, querystring: AcceptQuery } }, async (request, reply) => {
      limit(request);
      const view = await acceptance.view(request.query.token);
      if (view.state !== 'ready') throw new AcceptanceRefused(view);
      return sendPage(reply, 200, acceptPage(request.query.token, view));
    });

    r.post('/invitations/accept', {
      config: { access: 'public' },
      // The acceptance page's form posts here (a page answers a browser); JSON clients get the
      // member, or problem details. Like the 3DS pages, kept out of the API reference: docs/people.md.
      schema: {
        hide: true,
        body: AcceptBody,
        response: { 200: MemberSchema, 400: problem(400), 404: problem(404), 409: problem(409), 410: problem(410), 413: problem(413), 415: problem(415), 429: problem(429) },
      },
    }, async (request, reply) => {
      limit(request);
      const done = await acceptance.accept(request.body.token, request.body);
      setSessionCookies(reply, done.session, secureCookies(deps.publicUrl()));
      if (wantsPage(request)) return sendPage(reply, 200, welcomePage(done.tenantName));
      return presentMember((await members.get(done.tenantId, done.memberId))!);
    });
  });
}
