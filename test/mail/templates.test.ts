import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkMessage, MailMessageError, type MailMessage } from '../../src/mail/message.ts';
import { escapeHtml, linkTo, renderMail } from '../../src/mail/index.ts';

const HOSTILE = `<script>alert("x")</script> & 'quotes' <img src=https://tracker.example/p.gif>`;

describe('mail: renderMail', () => {
  const link = 'https://coffer.example.com/invitations/accept?token=abc&next=%2Fme';
  const { text, html } = renderMail({
    title: `Join ${HOSTILE}`,
    paragraphs: [`Invited by ${HOSTILE}`, 'Line one\nLine two'],
    action: { label: `Accept ${HOSTILE}`, url: link },
    footer: `Sent by Coffer for ${HOSTILE}`,
  });

  it('escapes every value in the HTML, and adds no markup of its own from them', () => {
    assert.doesNotMatch(html, /<script|<img/i);
    assert.ok(html.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39; &lt;img src=https://tracker.example/p.gif&gt;'));
    assert.ok(html.includes(`href="${link.replace(/&/g, '&amp;')}"`), 'the link, attribute-escaped');
    assert.ok(html.includes('Line one<br>Line two'), 'line breaks kept');
  });

  it('is one self-contained page, readable on a phone: viewport, a narrow single column, no external resources', () => {
    // Plain values here: the hostile ones above show, escaped, what these patterns look for.
    const { html } = renderMail({ title: 'Join Acme', paragraphs: ['Bob invited you.'], action: { label: 'Accept', url: link }, footer: 'Coffer' });
    assert.match(html, /^<!DOCTYPE html>/);
    assert.match(html, /<meta name="viewport" content="width=device-width, initial-scale=1">/);
    assert.match(html, /max-width:560px/);
    assert.doesNotMatch(html, /<(img|script|link|iframe|object|embed|style)\b|\bsrc=|url\(|@import/i);
    // The only links are the action's (button and its address spelled out).
    assert.deepEqual([...html.matchAll(/href="([^"]*)"/g)].map((m) => m[1]), [link.replace(/&/g, '&amp;'), link.replace(/&/g, '&amp;')]);
  });

  it('has a plain-text alternative with the same words and the link on a line of its own', () => {
    const lines = text.split('\n');
    assert.equal(lines[0], `Join ${HOSTILE}`);
    assert.ok(lines.includes(`Invited by ${HOSTILE}`));
    assert.ok(lines.includes(link), 'the link stands alone on its line');
    assert.ok(lines.includes(`Accept ${HOSTILE}:`));
    assert.ok(text.includes(`--\nSent by Coffer for ${HOSTILE}`));
    assert.doesNotMatch(text, /&amp;|&lt;/, 'text is not HTML-escaped');
  });

  it('needs no action or footer, and refuses an action URL that is not http(s)', () => {
    const plain = renderMail({ title: 'Hello', paragraphs: ['Just a note.'] });
    assert.equal(plain.text, 'Hello\n\nJust a note.\n');
    assert.doesNotMatch(plain.html, /href=/);
    for (const url of ['javascript:alert(1)', 'data:text/html,x', '/relative', 'not a url']) {
      assert.throws(() => renderMail({ title: 't', paragraphs: [], action: { label: 'Go', url } }), /action URL must be an absolute http\(s\) URL/, url);
    }
  });

  it('escapeHtml and linkTo', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    assert.equal(linkTo('https://coffer.example.com/vault', '/invitations/accept', { token: 'a+b/c=' }), 'https://coffer.example.com/vault/invitations/accept?token=a%2Bb%2Fc%3D');
    assert.equal(linkTo('http://127.0.0.1:8080/', 'signin'), 'http://127.0.0.1:8080/signin');
  });
});

describe('mail: what a message may hold', () => {
  const ok: MailMessage = { to: 'Jane <jane@example.com>', subject: 'Hi', text: 'Body', html: '<p>Body</p>', headers: { 'Reply-To': 'ops@example.com', 'X-Kind': 'test' } };
  const refused = (change: Partial<MailMessage> | Record<string, unknown>, why: RegExp) =>
    assert.throws(() => checkMessage({ ...ok, ...change } as MailMessage), (err: unknown) => err instanceof MailMessageError && why.test(err.message));

  it('takes one recipient, a one-line subject, a text body and harmless headers', () => {
    checkMessage(ok);
    checkMessage({ to: 'jane@example.com', subject: 'Hi', text: 'Body' });
  });

  it('refuses what could re-address or restructure the message, naming the field but not its value', () => {
    refused({ to: 'a@example.com, b@example.com' }, /^the recipient \("to"\) must be exactly one address$/);
    refused({ to: 'nobody' }, /recipient .* must be an e-mail address/);
    refused({ to: 'a@example.com\r\nBcc: b@example.com' }, /recipient .* must be on one line/);
    refused({ subject: 'Hi\r\nBcc: b@example.com' }, /subject must be on one line/);
    refused({ subject: ' ' }, /no subject/);
    refused({ text: '' }, /no text body/);
    refused({ headers: { Bcc: 'b@example.com' } }, /^header Bcc is set by Coffer/);
    refused({ headers: { 'content-type': 'text/plain' } }, /^header content-type is set by Coffer/);
    refused({ headers: { 'X-Ok': 'a\nBcc: b@example.com' } }, /^header X-Ok must be a string on one line$/);
    refused({ headers: { 'Bad Name': 'x' } }, /not a valid field name/);
    refused({ text: 'x'.repeat(300_000) }, /larger than 262144 bytes/);
  });
});
