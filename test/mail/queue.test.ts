import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { simpleParser } from 'mailparser';
import type { Database } from '../../src/db/database.ts';
import { linkTo, MAIL_JOB, MailMessageError, renderMail, type MailFailure, type MailMessage, type MailService } from '../../src/mail/index.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.ts';
import { until } from '../helpers/until.ts';

/** A sign-in message with a fresh one-time link, its link, recipient and subject remembered as secrets for the log scan. */
function signInMessage(publicUrl: string): { message: MailMessage; link: string; token: string } {
  const token = randomBytes(32).toString('base64url');
  const link = linkTo(publicUrl, '/signin/confirm', { token });
  const to = `member-${randomUUID().slice(0, 8)}@customer.example`;
  const subject = `Your sign-in link ${randomUUID()}`;
  rememberSecret(token, link, to, subject);
  const body = renderMail({ title: 'Sign in to Coffer', paragraphs: ['The link works once, for 15 minutes.'], action: { label: 'Sign in', url: link } });
  return { message: { to, subject, ...body }, link, token };
}

/** The log lines (every server's, in the scanned directory) that mention `text`. */
function logLinesWith(text: string): string[] {
  const dir = process.env.COFFER_TEST_LOG_DIR;
  if (!dir) return [];
  return fs.readdirSync(dir).filter((f) => f.endsWith('.log'))
    .flatMap((f) => fs.readFileSync(path.join(dir, f), 'utf8').split('\n')).filter((line) => line.includes(text));
}

describe('mail: queued in a transaction, sent by the mail.send job over SMTP', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  let mail: MailService;
  let db: Database;
  const failures: MailFailure[] = [];
  const statusOf = (id: string) => mail.mailStatus(server.tenantId, id);

  before(async () => {
    smtp = await startSmtpServer();
    server = await startTestServer({
      SMTP_URL: smtp.url, MAIL_FROM: 'Coffer <coffer@coffer.example>', PUBLIC_URL: 'https://coffer.example/', MAIL_MAX_ATTEMPTS: '3', MAIL_RETRY_SCHEDULE: '50ms', JOB_POLL_MS: '20',
    });
    mail = server.running.services.mail;
    db = server.running.database.db;
    mail.registerFailureHandler('test.failed', async (failure, tx) => {
      // Called in the transaction that marks the message failed: the change is visible in it.
      const row = await db.one<{ status: string }>(`SELECT status FROM mails WHERE id = $1`, [failure.mailId], tx);
      assert.equal(row?.status, 'failed');
      failures.push(failure);
    });
  });
  after(async () => {
    await server?.stop();
    await smtp?.close();
  });

  it('sends a message once its transaction commits; its payload is sealed, its status becomes sent', async () => {
    const { message, link, token } = signInMessage(server.config.mail.publicUrl);
    assert.ok(link.startsWith('https://coffer.example/signin/confirm?token='));
    const before = smtp.received.length;
    const id = await db.transaction((tx) => mail.enqueueMail(tx, server.tenantId, message));

    const received = (await smtp.waitFor(before + 1))[before];
    assert.equal(received.subject, message.subject);
    const to = Array.isArray(received.to) ? received.to[0] : received.to;
    assert.equal(to?.value[0].address, message.to);
    assert.ok(received.text?.includes(link));
    assert.ok((received.html as string).includes(`href="${link}"`));
    assert.equal(received.messageId, `<${id}@coffer.example>`);

    const status = await until(async () => ((await statusOf(id))?.status === 'sent' ? statusOf(id) : undefined), 'the message marked sent');
    assert.equal(status!.attempts, 1);
    assert.equal(status!.last_error, null);
    assert.ok(status!.finished_at instanceof Date);

    // At rest: the job holds the message only sealed, the mails row only its status.
    const job = (await db.one<{ payload: Record<string, string>; status: string }>(
      `SELECT j.payload, j.status FROM jobs j JOIN mails m ON m.job_id = j.id WHERE m.id = $1`, [id],
    ))!;
    assert.deepEqual(Object.keys(job.payload).sort(), ['data_key_id', 'mail_id', 'sealed']);
    const stored = JSON.stringify(await db.query(`SELECT j.*, m.* FROM jobs j JOIN mails m ON m.job_id = j.id WHERE m.id = $1`, [id]));
    for (const secret of [token, message.to, message.subject, 'Sign in to Coffer']) assert.ok(!stored.includes(secret), 'nothing of the message in the clear');
    const sealed = Buffer.from(job.payload.sealed, 'base64').toString('latin1');
    assert.ok(!sealed.includes(token) && !sealed.includes('customer.example'));

    // Logged: the mail id and what happened; never the recipient, subject or link.
    const lines = await until(() => { const l = logLinesWith(id); return l.some((x) => x.includes('mail sent')) && l; }, 'the mail sent log line');
    for (const line of lines) assert.ok(!line.includes(message.to) && !line.includes(message.subject) && !line.includes(token), line);
  });

  it('sends nothing when the transaction rolls back', async () => {
    const { message } = signInMessage(server.config.mail.publicUrl);
    let id: string | undefined;
    await assert.rejects(db.transaction(async (tx) => {
      id = await mail.enqueueMail(tx, server.tenantId, message);
      throw new Error('the invitation could not be stored');
    }), /could not be stored/);
    assert.ok(id);
    assert.equal(await statusOf(id!), undefined);
    assert.equal((await db.query(`SELECT 1 FROM jobs WHERE kind = $1 AND payload->>'mail_id' = $2`, [MAIL_JOB, id])).length, 0);

    // A message committed afterwards arrives; the rolled-back one never does.
    const next = signInMessage(server.config.mail.publicUrl);
    const before = smtp.received.length;
    await db.transaction((tx) => mail.enqueueMail(tx, server.tenantId, next.message));
    await smtp.waitFor(before + 1);
    await sleep(200);
    assert.deepEqual(smtp.received.slice(before).map((m) => m.subject), [next.message.subject]);
  });

  it('retries a recipient the server refuses, then records the failure and calls the failure handler once', async () => {
    const { message } = signInMessage(server.config.mail.publicUrl);
    smtp.refuseRecipients = true;
    const rcptBefore = smtp.rcptAttempts;
    let id: string;
    try {
      id = await db.transaction((tx) => mail.enqueueMail(tx, server.tenantId, message, { onFailure: { handler: 'test.failed', ref: 'invitation-42' } }));
      await until(async () => (await statusOf(id))?.status === 'failed', 'the message given up on');
    } finally {
      smtp.refuseRecipients = false;
    }
    const status = (await statusOf(id))!;
    assert.equal(status.attempts, 3);
    assert.match(status.last_error!, /^the SMTP server answered 550 5\.1\.1 to RCPT TO/);
    assert.ok(!status.last_error!.includes(message.to));
    assert.equal(smtp.rcptAttempts - rcptBefore, 3, 'one RCPT TO per attempt');

    const jobOf = () => db.one<{ status: string; attempts: number }>(`SELECT j.status, j.attempts FROM jobs j JOIN mails m ON m.job_id = j.id WHERE m.id = $1`, [id]);
    const job = await until(async () => { const j = await jobOf(); return j?.status === 'dead' && j; }, 'the job dead-lettered');
    assert.equal(job.attempts, 3);
    assert.deepEqual(failures.filter((f) => f.mailId === id), [{ mailId: id, tenantId: server.tenantId, ref: 'invitation-42', error: status.last_error, attempts: 3 }]);
    const lines = logLinesWith(id);
    assert.ok(lines.some((l) => l.includes('mail given up')), 'the failure is logged');
    for (const line of lines) assert.ok(!line.includes(message.to) && !line.includes(message.subject), line);
  });

  it('refuses a malformed message or an unknown failure handler when it is queued, and keeps statuses to their tenant', async () => {
    const { message } = signInMessage(server.config.mail.publicUrl);
    await db.transaction(async (tx) => {
      await assert.rejects(mail.enqueueMail(tx, server.tenantId, { ...message, to: 'a@x.example, b@x.example' }), MailMessageError);
      await assert.rejects(mail.enqueueMail(tx, server.tenantId, message, { onFailure: { handler: 'nobody' } }), /no mail failure handler "nobody"/);
    });
    const other = randomUUID();
    await db.query(`INSERT INTO tenants (id, name) VALUES ($1, 'other')`, [other]);
    const id = await db.transaction((tx) => mail.enqueueMail(tx, other, message));
    assert.equal(await statusOf(id), undefined, 'another tenant\'s message is not found');
    assert.equal((await mail.mailStatus(other, id))?.id, id);
    assert.equal(await statusOf('not-a-uuid'), undefined);
    const both = await mail.mailStatuses(other, [id, randomUUID(), 'x']);
    assert.deepEqual([...both.keys()], [id]);
  });

  it('sweeps: gives up on a message whose job died unsettled, and forgets statuses past retention', async () => {
    const { message } = signInMessage(server.config.mail.publicUrl);
    // As if its worker died during the last attempt: the job runner dead-letters it without the handler.
    const id = await db.transaction(async (tx) => {
      const mailId = await mail.enqueueMail(tx, server.tenantId, message, { onFailure: { handler: 'test.failed', ref: 'stranded' } });
      await db.query(`UPDATE jobs SET status = 'dead', attempts = 3, finished_at = now(), last_error = 'its lease lapsed' WHERE id = (SELECT job_id FROM mails WHERE id = $1)`, [mailId], tx);
      await db.query(`UPDATE mails SET created_at = now() - interval '2 minutes' WHERE id = $1`, [mailId], tx);
      return mailId;
    });
    await mail.sweep({ sentDays: 7, failedDays: 30 });
    const status = (await statusOf(id))!;
    assert.equal(status.status, 'failed');
    assert.equal(status.last_error, 'its lease lapsed');
    assert.deepEqual(failures.filter((f) => f.mailId === id).map((f) => [f.ref, f.attempts]), [['stranded', 3]]);

    await db.query(`UPDATE mails SET finished_at = now() - interval '31 days' WHERE id = $1`, [id]);
    assert.ok((await mail.sweep({ sentDays: 7, failedDays: 30 })) >= 1);
    assert.equal(await statusOf(id), undefined);
  });
});

describe('mail: without SMTP_URL, the job writes the message to DATA_DIR/outbox', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ JOB_POLL_MS: '20', PORT: '0' });
  });
  after(async () => server?.stop());

  it('writes one .eml file, mode 0600, that parses back with the link', async () => {
    const { message, link } = signInMessage(server.config.mail.publicUrl);
    const mail = server.running.services.mail;
    const id = await server.running.database.db.transaction((tx) => mail.enqueueMail(tx, server.tenantId, message));
    await until(async () => (await mail.mailStatus(server.tenantId, id))?.status === 'sent', 'the message written');
    const dir = path.join(server.config.dataDir, 'outbox');
    const [file] = fs.readdirSync(dir).filter((f) => f.endsWith(`-${id}.eml`));
    assert.ok(file);
    assert.equal(fs.statSync(path.join(dir, file)).mode & 0o777, 0o600);
    const parsed = await simpleParser(fs.readFileSync(path.join(dir, file)));
    assert.equal(parsed.subject, message.subject);
    assert.ok(parsed.text?.includes(link));
    assert.ok((parsed.html as string).includes(`href="${link}"`));
  });
});
