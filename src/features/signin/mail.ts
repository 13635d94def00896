import { linkTo, renderMail, type MailMessage } from '../../mail/index.ts';
import { humanTime } from '../invitations/mail.ts';

/** The sign-in e-mail: one link, to a page whose button signs in (a mail scanner opening the link uses nothing up). */
export function signinMail(m: { to: string; tenantName: string; expiresAt: Date; minutes: number; publicUrl: string; token: string }): MailMessage {
  const url = linkTo(m.publicUrl, '/signin/link', { token: m.token });
  const { text, html } = renderMail({
    title: `Sign in to ${m.tenantName}`,
    paragraphs: [
      `Someone (we hope you) asked to sign in to the tenant "${m.tenantName}" on Coffer with this address.`,
      `The link works once, for ${m.minutes} minutes (until ${humanTime(m.expiresAt)}).`,
    ],
    action: { label: 'Sign in', url },
    footer: 'If you did not ask to sign in, ignore this e-mail: nobody can sign in without this link.',
  });
  return { to: m.to, subject: oneLine(`Sign in to ${m.tenantName} on Coffer`), text, html };
}

/** Names people typed can hold anything but line breaks in a subject. */
export function oneLine(s: string): string {
  return s.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}
