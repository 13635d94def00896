import type { KeyObject } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { decryptEcv2 } from './ecv2.ts';
import { GooglePayError } from './errors.ts';
import { VerifiedIntermediates } from './intermediates.ts';
import { verifiesUnder } from './primitives.ts';
import type { RootKey } from './root-keys.ts';
import type { DecryptBatch, DecryptOutcome, DecryptWorkerData } from './decrypt-pool.ts';

/**
 * A Google Pay decryption thread (decrypt-pool.ts): ECv2 steps 1 to 8 (decryptEcv2) for the
 * tokens the event loop hands over, a batch at a time, answered with one message per batch.
 * It holds Coffer's private keys (from workerData) and keeps its own verified intermediate
 * keys; root keys arrive with the jobs, by id. Nothing here logs, and no answer carries more
 * than a payment or a GooglePayError's code, message and field.
 */

const { privateKeys, recipientId } = workerData as DecryptWorkerData;
const keys: readonly KeyObject[] = privateKeys;
const intermediates = new VerifiedIntermediates();
/** Root keys by the pool's id: they change when Google's keys.json does, a few times a year. */
const roots = new Map<number, RootKey>();

parentPort!.on('message', (batch: DecryptBatch) => {
  for (const root of batch.roots ?? []) roots.set(root.id, { protocolVersion: root.protocolVersion, keyExpiration: root.keyExpiration, key: root.key });
  void Promise.all(batch.jobs.map(async (job): Promise<DecryptOutcome> => {
    try {
      const rootKeys = job.roots.map((id) => roots.get(id)).filter((root): root is RootKey => root !== undefined);
      const payment = await decryptEcv2(job.token, { rootKeys, privateKeys: keys, recipientId, now: job.now, intermediates, verify: verifiesUnder });
      return { id: job.id, payment };
    } catch (err) {
      if (err instanceof GooglePayError) return { id: job.id, error: { code: err.code, message: err.message, field: err.field } };
      // A bug, not the token's fault: the name and message only (Node's crypto errors name no key material).
      return { id: job.id, fault: err instanceof Error ? `${err.name}: ${err.message}` : 'a non-error was thrown' };
    }
  })).then((outcomes) => parentPort!.postMessage(outcomes));
});
