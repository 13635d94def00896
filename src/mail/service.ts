import type { Database, Tx } from '../db/database.ts';
import { uuidv7 } from '../db/ids.ts';
import { enqueue, type ClaimedJob } from '../db/jobs.ts';
import type { Logger } from '../logger.ts';
import type { Vault } from '../vault/tenant-keys.ts';
import { checkMessage, MailDeliveryError, MailMessageError, pickMessage, type Mailer, type MailMessage } from './message.ts';

/** The job kind that sends one message. */
export const MAIL_JOB = 'mail.send';

export type MailStatus = {
  id: string;
  /** `pending` until sent or given up on; `failed` after the last attempt (MAIL_MAX_ATTEMPTS) failed. */
  status: 'pending' | 'sent' | 'failed';
  attempts: number;
  /** Why the latest attempt failed, quoting nothing of the message (`the SMTP server answered 550 5.1.1 to RCPT TO (EENVELOPE)`). */
  last_error: string | null;
  created_at: Date;
  /** When it was sent or given up on. */
  finished_at: Date | null;
};

/** What a failure handler is told when a message is given up on. */
export type MailFailure = { mailId: string; tenantId: string; ref: string | null; error: string; attempts: number };

/** Runs in the transaction that marks the message failed: it rolls back with it, and then runs again later. */
export type MailFailureHandler = (failure: MailFailure, tx: Tx) => Promise<void>;

export type EnqueueMailOptions = {
  /** A handler registered with registerFailureHandler, called with `ref` if the message is given up on. */
  onFailure?: { handler: string; ref?: string };
};

/** A mail.send job's payload: the message sealed with the tenant's data key, bound to the mail id. */
export type MailJobPayload = { mail_id: string; sealed: string; data_key_id: string };

const COLUMNS = 'id, status, attempts, last_error, created_at, finished_at';

export type MailService = ReturnType<typeof createMailService>;

/**
 * Mail sent from the jobs queue after the sender's transaction commits (the outbox pattern).
 * The message is sealed in the job's payload; the `mails` table keeps only its status. Logs
 * name mail ids, tenants, attempts and reasons, never a recipient, subject, body or link.
 */
export function createMailService(deps: { db: Database; vault: Vault; mailer: Mailer; log: Logger; maxAttempts: number }) {
  const { db, vault, mailer, log, maxAttempts } = deps;
  const failureHandlers = new Map<string, MailFailureHandler>();

  /** Marks the message failed and runs its failure handler, in one transaction; false when it was no longer pending. */
  async function giveUp(tenantId: string, mailId: string, jobId: string, attempts: number, error: string): Promise<boolean> {
    const row = await db.transaction(async (tx) => {
      const updated = await db.one<{ on_failure: string | null; failure_ref: string | null }>(
        `UPDATE mails SET status = 'failed', attempts = $3, last_error = $4, finished_at = now()
         WHERE tenant_id = $1 AND id = $2 AND status = 'pending' RETURNING on_failure, failure_ref`,
        [tenantId, mailId, attempts, error],
        tx,
      );
      const handler = updated?.on_failure ? failureHandlers.get(updated.on_failure) : undefined;
      if (updated?.on_failure && !handler) log.warn({ mail_id: mailId, handler: updated.on_failure }, 'no mail failure handler of this name is registered');
      await handler?.({ mailId, tenantId, ref: updated!.failure_ref, error, attempts }, tx);
      return updated;
    });
    if (row) log.error({ mail_id: mailId, job_id: jobId, tenant_id: tenantId, attempts, err: error }, 'mail given up: it could not be sent');
    return row !== undefined;
  }

  return {
    mailer,

    /** Names a handler enqueueMail's `onFailure` may refer to; register it at start, in every process. */
    registerFailureHandler(name: string, handler: MailFailureHandler): void {
      failureHandlers.set(name, handler);
    },

    /**
     * Queues `message` in the caller's transaction: it is sent once that commits, never if it
     * rolls back. Returns the mail id, for mailStatus. A malformed message is refused here
     * (MailMessageError), not when it would be sent.
     */
    async enqueueMail(tx: Tx, tenantId: string, message: MailMessage, opts: EnqueueMailOptions = {}): Promise<string> {
      checkMessage(message);
      const onFailure = opts.onFailure;
      if (onFailure && !failureHandlers.has(onFailure.handler)) throw new MailMessageError(`no mail failure handler "${onFailure.handler}" is registered`);
      const id = uuidv7();
      const sealed = await vault.encrypt(tenantId, mailAad(id), pickMessage(message));
      const payload: MailJobPayload = { mail_id: id, sealed: sealed.ciphertext.toString('base64'), data_key_id: sealed.dataKeyId };
      const jobId = await enqueue(db, tenantId, MAIL_JOB, payload, { maxAttempts }, tx);
      await db.query(
        `INSERT INTO mails (tenant_id, id, job_id, on_failure, failure_ref) VALUES ($1, $2, $3, $4, $5)`,
        [tenantId, id, jobId, onFailure?.handler ?? null, onFailure?.ref ?? null],
        tx,
      );
      return id;
    },

    /** The delivery status of one of the tenant's messages; undefined for an unknown id (or one past retention). */
    async mailStatus(tenantId: string, id: string, tx?: Tx): Promise<MailStatus | undefined> {
      if (!isUuid(id)) return undefined;
      return db.one<MailStatus>(`SELECT ${COLUMNS} FROM mails WHERE tenant_id = $1 AND id = $2`, [tenantId, id], tx);
    },

    /** The statuses of several messages at once (for a page of invitations), by mail id. */
    async mailStatuses(tenantId: string, ids: string[], tx?: Tx): Promise<Map<string, MailStatus>> {
      const wanted = ids.filter(isUuid);
      if (wanted.length === 0) return new Map();
      const rows = await db.query<MailStatus>(`SELECT ${COLUMNS} FROM mails WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, [tenantId, wanted], tx);
      return new Map(rows.map((r) => [r.id, r]));
    },

    /** The MAIL_JOB handler: opens the message and sends it; the last failed attempt gives it up. */
    async deliver(job: ClaimedJob<MailJobPayload>): Promise<void> {
      const tenantId = job.tenantId!;
      const p = job.payload;
      const row = await db.one<{ status: string }>(`SELECT status FROM mails WHERE tenant_id = $1 AND id = $2`, [tenantId, p.mail_id]);
      // Its tenant was deleted, or a retry after a send whose job outcome was not recorded.
      if (!row || row.status !== 'pending') return;
      try {
        let message: MailMessage;
        try {
          message = (await vault.decrypt(tenantId, mailAad(p.mail_id), Buffer.from(p.sealed, 'base64'), p.data_key_id)) as MailMessage;
        } catch (err) {
          throw new MailDeliveryError(`the sealed message could not be opened: ${String((err as Error)?.message).slice(0, 200)}`);
        }
        await mailer.send(message, p.mail_id);
      } catch (err) {
        const error = err instanceof MailDeliveryError ? err.message : `sending failed (${(err as Error)?.name ?? 'error'})`;
        if (job.attempt >= job.maxAttempts) {
          // A failure handler that fails leaves the message pending under a dead job: the sweep gives it up again.
          await giveUp(tenantId, p.mail_id, job.id, job.attempt, error).catch((e: Error) => {
            log.error({ mail_id: p.mail_id, job_id: job.id, err: String(e?.message).slice(0, 300) }, 'could not record that a mail was given up; the sweep will');
          });
        } else await db.query(`UPDATE mails SET attempts = $3, last_error = $4 WHERE tenant_id = $1 AND id = $2 AND status = 'pending'`, [tenantId, p.mail_id, job.attempt, error]);
        // The job runner logs it (this message only) and retries or dead-letters the job.
        throw new MailDeliveryError(error);
      }
      await db.query(
        `UPDATE mails SET status = 'sent', attempts = $3, last_error = NULL, finished_at = now() WHERE tenant_id = $1 AND id = $2`,
        [tenantId, p.mail_id, job.attempt],
      );
      log.info({ mail_id: p.mail_id, job_id: job.id, tenant_id: tenantId, attempt: job.attempt, transport: mailer.transport }, 'mail sent');
    },

    /**
     * Gives up on messages whose job ended without settling them (its worker died during the
     * last attempt, or a failure handler failed), then deletes statuses past retention.
     */
    async sweep(retention: { sentDays: number; failedDays: number }): Promise<number> {
      const stranded = await db.query<{ tenant_id: string; id: string; job_id: string; attempts: number; last_error: string | null }>(
        `SELECT m.tenant_id, m.id, m.job_id, coalesce(j.attempts, m.attempts) AS attempts, coalesce(j.last_error, m.last_error) AS last_error
         FROM mails m LEFT JOIN jobs j ON j.id = m.job_id
         WHERE m.status = 'pending' AND m.created_at < now() - interval '1 minute' AND (j.id IS NULL OR j.status = 'dead')
         LIMIT 500`,
      );
      for (const m of stranded) await giveUp(m.tenant_id, m.id, m.job_id, m.attempts, m.last_error ?? 'its delivery job ended without an outcome');
      let deleted = 0;
      for (const [status, days] of [['sent', retention.sentDays], ['failed', retention.failedDays]] as const) {
        for (;;) {
          const rows = await db.query(
            `DELETE FROM mails WHERE (tenant_id, id) IN (
               SELECT tenant_id, id FROM mails WHERE status = $1 AND finished_at < now() - make_interval(days => $2) LIMIT 5000)
             RETURNING id`,
            [status, days],
          );
          deleted += rows.length;
          if (rows.length < 5000) break;
        }
      }
      return deleted;
    },

    close(): Promise<void> {
      return mailer.close();
    },
  };
}

/** A message is sealed to its mail id: its ciphertext cannot pass for a token's or another message's. */
function mailAad(mailId: string): string {
  return `mail:${mailId}`;
}

function isUuid(id: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id);
}
