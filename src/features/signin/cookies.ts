import type { FastifyReply, FastifyRequest } from 'fastify';
import { parseCookies, serializeCookie } from '../../http/cookies.ts';
import { CSRF_COOKIE, SESSION_COOKIE, type StartedSession } from './service.ts';

/** `Secure` whenever people reach Coffer over https (PUBLIC_URL). */
export function secureCookies(publicUrl: string): boolean {
  return publicUrl.startsWith('https:');
}

/** The session cookie (HttpOnly) and the CSRF cookie the browser's code reads and repeats in X-CSRF-Token. */
export function setSessionCookies(reply: FastifyReply, session: StartedSession, secure: boolean): void {
  reply.header('set-cookie', [
    serializeCookie(SESSION_COOKIE, session.cookie, { httpOnly: true, secure, maxAgeSeconds: session.maxAgeSeconds }),
    serializeCookie(CSRF_COOKIE, session.csrf, { httpOnly: false, secure, maxAgeSeconds: session.maxAgeSeconds }),
  ]);
}

export function clearSessionCookies(reply: FastifyReply, secure: boolean): void {
  reply.header('set-cookie', [
    serializeCookie(SESSION_COOKIE, '', { httpOnly: true, secure, maxAgeSeconds: 0 }),
    serializeCookie(CSRF_COOKIE, '', { httpOnly: false, secure, maxAgeSeconds: 0 }),
  ]);
}

export function sessionCookie(request: FastifyRequest): string | undefined {
  return parseCookies(request.headers.cookie).get(SESSION_COOKIE);
}
