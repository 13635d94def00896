import { linkTo, renderMail, type MailMessage } from '../../mail/index.ts';

/** Text for a role, as the e-mail and the page say it. */
export const ROLE_TEXT: Record<string, string> = {
  ADMIN: 'an administrator (every management permission)',
  READ_ONLY: 'a read-only member',
};

/** "28 November 2026, 14:05 UTC": read by people, in one unambiguous zone. */
export function humanTime(at: Date): string {
  const d = at.toISOString();
  const months = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
  return `${Number(d.slice(8, 10))} ${months[Number(d.slice(5, 7)) - 1]} ${d.slice(0, 4)}, ${d.slice(11, 16)} UTC`;
}

/** `s` as the start of a sentence: `the "Management" application` → `The "Management" application`. */
export function sentenceStart(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The invitation e-mail: who invites, to which tenant, as what, until when, and the link. */
export function invitationMail(m: { to: string; tenantName: string; inviter: string; role: string; expiresAt: Date; publicUrl: string; token: string }): MailMessage {
  const url = linkTo(m.publicUrl, '/invitations/accept', { token: m.token });
  const title = `Join ${m.tenantName} on Coffer`;
  const { text, html } = renderMail({
    title,
    paragraphs: [
      `${sentenceStart(m.inviter)} invited you to join the tenant "${m.tenantName}" on Coffer as ${ROLE_TEXT[m.role] ?? m.role}.`,
      `The invitation expires on ${humanTime(m.expiresAt)}. After that, ask ${m.inviter} to send it again.`,
    ],
    action: { label: 'Accept the invitation', url },
    footer: `This link is for ${m.to} only: do not forward it. If you did not expect this invitation, ignore this e-mail; nothing happens until the link is used.`,
  });
  return { to: m.to, subject: `${sentenceStart(m.inviter)} invited you to join ${m.tenantName} on Coffer`.replace(/[\u0000-\u001f\u007f]+/g, ' '), text, html };
}
