import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.ts';
import { createMailer, logMailSetup, MailDeliveryError, renderMail } from '../../src/mail/index.ts';

/** A logger whose lines are kept in `lines`. */
function capturingLogger() {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, new Writable({ write(chunk, _enc, done) { lines.push(String(chunk)); done(); } }));
  return { log, lines };
}

describe('mail: the outbox transport (no SMTP_URL)', () => {
  let dataDir: string;
  before(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-outbox-'));
  });
  after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('writes each message as one .eml file, mode 0600, named by time and id, that parses back whole', async () => {
    const config = loadConfig({ DATA_DIR: dataDir, MAIL_FROM: 'Coffer <no-reply@coffer.example>' });
    const mailer = createMailer(config.mail);
    assert.equal(mailer.transport, 'outbox');
    assert.equal(mailer.destination, path.join(dataDir, 'outbox'));
    const link = `https://coffer.example/signin?token=${randomUUID()}`;
    const body = renderMail({ title: 'Sign in', paragraphs: ['Use the link <below> within 15 minutes.'], action: { label: 'Sign in', url: link } });
    const first = randomUUID();
    const second = randomUUID();
    await mailer.send({ to: 'member@customer.example', subject: 'Your sign-in link', ...body }, first);
    await mailer.send({ to: 'other@customer.example', subject: 'Another', text: 'plain only' }, second);

    const dir = path.join(dataDir, 'outbox');
    assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
    const files = fs.readdirSync(dir).sort();
    assert.equal(files.length, 2, `no temporary files left behind: ${files.join(', ')}`);
    const named = (id: string) => files.find((f) => new RegExp(`^\\d{8}T\\d{9}Z-${id}\\.eml$`).test(f));
    assert.ok(named(first) && named(second), files.join(', '));
    for (const f of files) assert.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, f);

    const mail = await simpleParser(fs.readFileSync(path.join(dir, named(first)!)));
    assert.equal(mail.subject, 'Your sign-in link');
    assert.deepEqual(mail.from?.value, [{ address: 'no-reply@coffer.example', name: 'Coffer' }]);
    const to = Array.isArray(mail.to) ? mail.to[0] : mail.to;
    assert.deepEqual(to?.value, [{ address: 'member@customer.example', name: '' }]);
    assert.equal(mail.messageId, `<${first}@coffer.example>`);
    assert.ok(mail.text?.includes(link));
    assert.ok((mail.html as string).includes(`href="${link}"`));
    assert.ok((mail.html as string).includes('Use the link &lt;below&gt; within 15 minutes.'));
    assert.equal(mail.headers.get('auto-submitted'), 'auto-generated');
  });

  it('sends from "Coffer <coffer@localhost>" when MAIL_FROM is unset', async () => {
    const mailer = createMailer(loadConfig({ DATA_DIR: path.join(dataDir, 'default-from') }).mail);
    await mailer.send({ to: 'a@customer.example', subject: 's', text: 't' }, randomUUID());
    const dir = path.join(dataDir, 'default-from', 'outbox');
    const mail = await simpleParser(fs.readFileSync(path.join(dir, fs.readdirSync(dir)[0])));
    assert.deepEqual(mail.from?.value, [{ address: 'coffer@localhost', name: 'Coffer' }]);
  });

  it('fails with a MailDeliveryError naming the directory, not the message, when it cannot write', async () => {
    const blocked = path.join(dataDir, 'blocked');
    fs.mkdirSync(blocked);
    fs.writeFileSync(path.join(blocked, 'outbox'), 'a file where the directory should be');
    const mailer = createMailer(loadConfig({ DATA_DIR: blocked }).mail);
    const err = await mailer.send({ to: 'hidden@customer.example', subject: 'hidden subject', text: 't' }, randomUUID()).catch((e: unknown) => e);
    assert.ok(err instanceof MailDeliveryError);
    assert.match(err.message, /could not be written to the outbox directory .*blocked\/outbox \((EEXIST|ENOTDIR)\)/);
    assert.doesNotMatch(err.message, /hidden/);
  });

  it('says at start where mail goes: the outbox directory, or the SMTP server without its password', () => {
    const outbox = capturingLogger();
    logMailSetup(outbox.log, createMailer(loadConfig({ DATA_DIR: dataDir }).mail));
    assert.equal(outbox.lines.length, 1);
    const line = JSON.parse(outbox.lines[0]);
    assert.equal(line.mail_transport, 'outbox');
    assert.equal(line.outbox_dir, path.join(dataDir, 'outbox'));
    assert.ok(line.msg.includes(path.join(dataDir, 'outbox')));

    const smtp = capturingLogger();
    logMailSetup(smtp.log, createMailer(loadConfig({ SMTP_URL: 'smtps://user:hunter2-secret@mail.example', MAIL_FROM: 'a@b.example' }).mail));
    assert.equal(smtp.lines.length, 1);
    assert.equal(JSON.parse(smtp.lines[0]).smtp, 'smtps://mail.example:465');
    assert.doesNotMatch(smtp.lines[0], /hunter2|user/);
  });
});
