import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { CSRF_COOKIE, CSRF_HEADER, parseCookies, SESSION_COOKIE } from '../../http/cookies.ts';
import { ApiError } from '../../http/errors.ts';
import type { TokenBuckets } from '../../http/rate-limit.ts';
import { problem, Timestamp, Uuid } from '../../http/schemas.ts';
import { emailProblem } from '../../mail/address.ts';
import { escapeHtml, page, pageScope, sendPage, wantsPage } from '../../pages/layout.ts';
import { UserSchema } from '../members/schema.ts';
import { clearSessionCookies, secureCookies, sessionCookie, setSessionCookies } from './cookies.ts';
import type { SigninService } from './service.ts';

const tags = ['sign-in'];

const SigninBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254 }),
  tenant_id: Type.Optional(Type.String({ format: 'uuid', description: 'The tenant to sign in to, for a member of several (default: the oldest membership)' })),
}, { additionalProperties: false });
const SwitchBody = Type.Object({ tenant_id: Type.String({ format: 'uuid', description: 'One of the tenants GET /me lists' }) }, { additionalProperties: false });
const LinkQuery = Type.Object({ token: Type.String({ maxLength: 200 }) });
const LinkForm = Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: true });

const MeSchema = Type.Object({
  user: UserSchema,
  tenant_id: Uuid,
  member_id: Uuid,
  role: Type.String(),
  permissions: Type.Array(Type.String()),
  session_expires_at: Timestamp,
  tenants: Type.Array(Type.Object({ id: Uuid, name: Type.String(), role: Type.String(), member_id: Uuid })),
});

function linkPage(token: string, tenantName: string, email: string | undefined): string {
  return page(`Sign in to ${tenantName}`, `<h1>Sign in to ${escapeHtml(tenantName)}</h1>
${email ? `<p>as ${escapeHtml(email)}</p>` : ''}
<form method="post" action="link">
<input type="hidden" name="token" value="${escapeHtml(token)}">
<button type="submit">Sign in</button>
</form>
<p class="muted">The link works once. If you did not ask to sign in, close this page.</p>`);
}

const LINK_PROBLEM: Record<string, [number, string]> = {
  unknown: [404, 'This sign-in link is not valid.'],
  used: [409, 'This sign-in link was used already: ask for a new one.'],
  expired: [410, 'This sign-in link has expired: ask for a new one.'],
};

/** POST /signin, the link's page and its button, POST /signout, GET /me: none takes an API key. */
export function registerSigninRoutes(app: FastifyInstance, deps: { signin: SigninService; limiter: TokenBuckets; publicUrl: () => string }): void {
  const { signin, limiter } = deps;
  const secure = () => secureCookies(deps.publicUrl());
  const limit = (request: FastifyRequest) => {
    const wait = limiter.take(`people:${request.ip}`);
    if (wait > 0) {
      const e = new ApiError(429, 'Too many sign-in attempts from this address: wait a minute and try again.');
      e.retryAfterSeconds = wait;
      throw e;
    }
  };

  app.register(async (scope) => {
    pageScope(scope, (error) => page('Cannot sign in', `<h1>Cannot sign in</h1>\n<p class="problem">${escapeHtml(error.detail)}</p>`));
    const r = scope.withTypeProvider<TypeBoxTypeProvider>();

    r.post('/signin', {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'E-mail a one-time sign-in link (15 minutes) to a member; the answer is the same whether or not the address is a member\'s',
        body: SigninBody,
        response: { 202: Type.Object({ message: Type.String() }), 400: problem(400), 413: problem(413), 415: problem(415), 429: problem(429) },
      },
    }, async (request, reply) => {
      limit(request);
      const email = request.body.email.trim();
      const why = emailProblem(email);
      if (why) throw ApiError.field('body.email', why);
      // Not awaited: a member's address (a link made and sealed) must not answer slower than a stranger's.
      signin.request(email, request.body.tenant_id?.toLowerCase()).catch((err: Error) => {
        request.log.error({ err: { message: err.message, code: (err as { code?: unknown }).code } }, 'a sign-in link could not be made');
      });
      return reply.code(202).send({ message: 'If this address belongs to a member, a sign-in link is on its way.' });
    });

    r.get('/signin/link', { config: { access: 'public' }, schema: { hide: true, querystring: LinkQuery } }, async (request, reply) => {
      limit(request);
      const view = await signin.viewLink(request.query.token);
      if (view.state !== 'ready') throw new ApiError(...LINK_PROBLEM[view.state]);
      return sendPage(reply, 200, linkPage(request.query.token, view.tenantName, view.email));
    });

    r.post('/signin/link', { config: { access: 'public' }, schema: { hide: true, body: LinkForm } }, async (request, reply) => {
      limit(request);
      const session = await signin.useLink(request.body.token);
      setSessionCookies(reply, session, secure());
      if (!wantsPage(request)) return reply.code(204).send();
      return sendPage(reply, 200, page('Signed in', '<h1 id="signed-in">You are signed in</h1>\n<p><a id="open-console" href="../console/">Open the console</a> · <a href="../me">Your account</a> · <a href="../docs">API reference</a></p>'));
    });

    r.post('/signout', {
      config: { access: 'public' },
      schema: { tags, summary: 'End the signed-in session (its cookie); answers 204 whether or not there was one', response: { 204: Type.Null() } },
    }, async (request, reply) => {
      await signin.end(sessionCookie(request));
      clearSessionCookies(reply, secure());
      return reply.code(204).send(null);
    });

    r.get('/me', {
      config: { access: 'public' },
      schema: { tags, summary: 'The signed-in member (session cookie): the user, the tenant the session acts in, every tenant they belong to with their roles', response: { 200: MeSchema, 401: problem(401) } },
    }, async (request) => signin.me(sessionCookie(request)));

    r.post('/me/tenant', {
      config: { access: 'public' },
      schema: {
        tags,
        summary: 'Switch the signed-in session to another tenant the user is a member of: new session cookies, the old session ends; answers as GET /me',
        body: SwitchBody,
        response: { 200: MeSchema, 400: problem(400), 401: problem(401), 403: problem(403), 413: problem(413), 415: problem(415) },
      },
    }, async (request, reply) => {
      // Members only, with the CSRF header like every call a signed-in member makes.
      const cookies = parseCookies(request.headers.cookie);
      const cookie = cookies.get(SESSION_COOKIE) ?? '';
      const csrf = request.headers[CSRF_HEADER];
      const current = await signin.authenticate(cookie, Array.isArray(csrf) ? csrf[0] : csrf, cookies.get(CSRF_COOKIE));
      const session = await signin.switchTenant(current, cookie, request.body.tenant_id.toLowerCase());
      setSessionCookies(reply, session, secure());
      return signin.me(session.cookie);
    });
  });
}
