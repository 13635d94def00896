import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config.ts';
import { createMailer, MailDeliveryError, renderMail, type Mailer, type MailMessage } from '../../src/mail/index.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';

const FROM = 'Coffer Test <coffer@mail.example>';

function smtpMailer(smtpUrl: string): Mailer {
  const mailer = createMailer(loadConfig({ SMTP_URL: smtpUrl, MAIL_FROM: FROM }).mail);
  assert.equal(mailer.transport, 'smtp');
  return mailer;
}

function invitation(link: string): MailMessage {
  return {
    to: 'Jane Müller <jane@customer.example>',
    subject: 'You are invited to Acme — join “Payments”',
    ...renderMail({
      title: 'Join Acme on Coffer',
      paragraphs: ['Bob <bob@acme.example> invited you to the tenant "Acme & Co".', 'The invitation expires in 72 hours.'],
      action: { label: 'Accept the invitation', url: link },
      footer: 'If you did not expect this, ignore it.',
    }),
    headers: { 'X-Coffer-Kind': 'invitation' },
  };
}

/** Sends with `mailer`, expecting a MailDeliveryError; returns its message. */
async function refusal(mailer: Mailer, message: MailMessage): Promise<string> {
  const err = await mailer.send(message, randomUUID()).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof MailDeliveryError, `expected a MailDeliveryError, got ${String(err)}`);
  return err.message;
}

describe('mail: the SMTP transport, against a real SMTP server', () => {
  let open: TestSmtpServer;
  let authed: TestSmtpServer;
  const credentials = { user: 'coffer-user', pass: `p@ss:${randomUUID()}` };
  before(async () => {
    open = await startSmtpServer();
    authed = await startSmtpServer({ auth: credentials });
  });
  after(async () => {
    await open?.close();
    await authed?.close();
  });

  it('sends a message whose parts, addresses and link read back intact (no auth)', async () => {
    const mailer = smtpMailer(open.url);
    const link = `http://127.0.0.1:8080/invitations/accept?token=${randomUUID()}&x=1`;
    const id = randomUUID();
    const sent = await mailer.send(invitation(link), id);
    await mailer.close();
    const [mail] = await open.waitFor(1);

    assert.equal(mail.subject, 'You are invited to Acme — join “Payments”');
    assert.deepEqual(mail.from?.value, [{ address: 'coffer@mail.example', name: 'Coffer Test' }]);
    const to = Array.isArray(mail.to) ? mail.to[0] : mail.to;
    assert.deepEqual(to?.value, [{ address: 'jane@customer.example', name: 'Jane Müller' }]);
    assert.deepEqual(open.envelopes[0], { from: 'coffer@mail.example', to: ['jane@customer.example'] });
    assert.equal(mail.messageId, `<${id}@mail.example>`);
    assert.equal(sent.messageId, `<${id}@mail.example>`);
    assert.equal(mail.headers.get('auto-submitted'), 'auto-generated');
    assert.equal(mail.headers.get('x-coffer-kind'), 'invitation');

    // The plain-text part and the HTML part, each with the link whole.
    assert.ok(mail.text?.includes(link), 'the text part holds the link');
    assert.match(mail.text!, /Bob <bob@acme\.example> invited you to the tenant "Acme & Co"\./);
    assert.equal(typeof mail.html, 'string');
    const html = mail.html as string;
    assert.ok(html.includes(`href="${link.replace(/&/g, '&amp;')}"`), 'the html part links to it');
    assert.ok(html.includes('Bob &lt;bob@acme.example&gt; invited you to the tenant &quot;Acme &amp; Co&quot;.'), 'values are escaped');
    assert.doesNotMatch(html, /<(img|script|link|iframe)\b|src=|url\(/i, 'no external resources');
  });

  it('logs in with the user and password of SMTP_URL (percent-decoded), and fails clearly with wrong ones', async () => {
    const mailer = smtpMailer(authed.url);
    await mailer.send({ to: 'ops@customer.example', subject: 'Authenticated', text: 'hello' }, randomUUID());
    const [mail] = await authed.waitFor(1);
    assert.equal(mail.subject, 'Authenticated');
    assert.equal(mail.text?.trim(), 'hello');
    assert.equal(mail.html, false, 'no HTML part when none was given');

    const wrong = smtpMailer(`smtp://coffer-user:not-it@127.0.0.1:${authed.port}`);
    const why = await refusal(wrong, { to: 'ops@customer.example', subject: 'x', text: 'x' });
    assert.match(why, /^the SMTP server answered 535 to AUTH (PLAIN|LOGIN) \(EAUTH\)$/);

    const anonymous = await refusal(smtpMailer(`smtp://127.0.0.1:${authed.port}`), { to: 'ops@customer.example', subject: 'x', text: 'x' });
    assert.match(anonymous, /^the SMTP server answered 530 .*to MAIL FROM/);
    assert.equal(authed.received.length, 1, 'nothing else was accepted');
  });

  it('reports a refused recipient by code and command only, never the address', async () => {
    open.refuseRecipients = true;
    try {
      const why = await refusal(smtpMailer(open.url), { to: 'secret-person@customer.example', subject: 'x', text: 'x' });
      assert.match(why, /^the SMTP server answered 550 5\.1\.1 to RCPT TO/);
      assert.doesNotMatch(why, /secret-person|customer\.example/);
    } finally {
      open.refuseRecipients = false;
    }
  });

  it('reports a server that is not there as a connection failure', async () => {
    // A port that was free a moment ago: nothing listens on it.
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const why = await refusal(smtpMailer(`smtp://127.0.0.1:${port}`), { to: 'someone@customer.example', subject: 'x', text: 'x' });
    assert.match(why, /^(ECONNECTION|ESOCKET|ECONNREFUSED): .*ECONNREFUSED/);
    assert.doesNotMatch(why, /someone/);
  });
});
