import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DecryptPool, type DecryptPoolOptions, decryptionUnavailable, GooglePayError, googlePayApiError, type RootKey } from '../../src/google-pay/index.ts';
import { p256KeyPair, paymentPayload, signIntermediate } from '../helpers/google-pay-seal.ts';
import { decrypt, NOW, PAN, root, seal, T, withSignedMessage, world } from './ecv2-setup.ts';
import { rejectsGooglePay } from './helpers.ts';

/** The decryption threads (src/google-pay/decrypt-pool.ts): the same answers as decryptEcv2 on the event loop, failures confined, a clean stop. */

const FAILING = new URL('./fixtures/failing-decrypt-worker.ts', import.meta.url);

function pool(o: Partial<DecryptPoolOptions> = {}): DecryptPool {
  return new DecryptPool({ size: 1, privateKeys: [world.recipient.privateKey], recipientId: world.recipientId, ...o });
}

/** What a promise settles to, as something assert.deepEqual can compare: a payment, or a GooglePayError's parts. */
async function outcome(p: Promise<unknown>): Promise<unknown> {
  try {
    return { payment: await p };
  } catch (err) {
    assert.ok(err instanceof GooglePayError, `not a GooglePayError: ${String(err)}`);
    return { code: err.code, message: err.message, field: err.field };
  }
}

function tampered(): unknown[] {
  const token = seal();
  const sealed = JSON.parse(token.signedMessage);
  const tag = Buffer.from(sealed.tag, 'base64');
  tag[0] ^= 1;
  return [
    withSignedMessage(token, JSON.stringify({ ...sealed, tag: tag.toString('base64') })),
    { ...token, signature: seal().signature },
    seal(paymentPayload({ now: NOW, messageExpiration: NOW - 1 })),
    withSignedMessage(token, '{"encryptedMessage": 1}'),
  ];
}

describe('Google Pay decryption threads', () => {
  it('start on first use and answer as decryptEcv2 does: payments and every GooglePayError, code, message and field', async () => {
    const threads = pool({ size: 2 });
    try {
      assert.equal(threads.threads, 0);
      const token = seal();
      assert.deepEqual(await outcome(threads.decrypt(token, [root], NOW)), await outcome(decrypt(token)));
      assert.equal(threads.threads, 1);
      for (const bad of tampered()) {
        const inline = await outcome(decrypt(bad));
        assert.ok(!('payment' in (inline as object)));
        assert.deepEqual(await outcome(threads.decrypt(bad as Record<string, unknown>, [root], NOW)), inline);
      }
      // Expiry is checked against the `now` handed over, not the thread's clock.
      await rejectsGooglePay(() => threads.decrypt(seal(), [root], NOW + 2 * 3_600_000), 'expired_message', `${T}.signedMessage`);
      await rejectsGooglePay(() => threads.decrypt(seal(), [], NOW), 'no_valid_root_key');
    } finally {
      await threads.close();
    }
  });

  it('many tokens at once: each gets its own answer, spread over the threads', async () => {
    const threads = pool({ size: 2 });
    try {
      const tokens = Array.from({ length: 40 }, (_, i) => seal(paymentPayload({ now: NOW, messageId: `m-${i}`, pan: `41111111111111${String(i).padStart(2, '0')}` })));
      const payments = await Promise.all(tokens.map((t) => threads.decrypt(t, [root], NOW)));
      assert.deepEqual(payments.map((p) => p.messageId), tokens.map((_, i) => `m-${i}`));
      assert.deepEqual(payments.map((p) => p.details.pan), tokens.map((_, i) => `41111111111111${String(i).padStart(2, '0')}`));
      assert.equal(threads.threads, 2);
      assert.equal(threads.inFlight, 0);
    } finally {
      await threads.close();
    }
  });

  it('root keys that change are sent to the threads: a token signed by a new root key verifies, one by a dropped key does not', async () => {
    const threads = pool();
    try {
      assert.equal((await threads.decrypt(seal(), [root], NOW)).details.pan, PAN);
      const next = p256KeyPair();
      const nextRoot: RootKey = { ...root, key: next.publicKey };
      const token = seal();
      const resigned = { ...token, intermediateSigningKey: { ...token.intermediateSigningKey, signatures: [signIntermediate(next.privateKey, token.intermediateSigningKey.signedKey)] } };
      await rejectsGooglePay(() => threads.decrypt(resigned, [root], NOW), 'bad_intermediate_signature');
      assert.equal((await threads.decrypt(resigned, [root, nextRoot], NOW)).details.pan, PAN);
      assert.equal((await threads.decrypt(resigned, [nextRoot], NOW)).details.pan, PAN);
      await rejectsGooglePay(() => threads.decrypt(seal(), [nextRoot], NOW), 'bad_intermediate_signature');
    } finally {
      await threads.close();
    }
  });

  it('a thread that fails fails the tokens it held (decryption_unavailable, 503 with Retry-After: 1), and the next token gets a new thread', async () => {
    const problems: string[] = [];
    const threads = pool({ script: FAILING, onThreadError: (m) => problems.push(m) });
    try {
      for (const how of ['throw', 'exit']) {
        const good = threads.decrypt(seal(), [root], NOW);
        const failing = threads.decrypt({ protocolVersion: how }, [root], NOW);
        const err = await rejectsGooglePay(() => failing, 'decryption_unavailable');
        assert.equal(err.field, undefined);
        const problem = googlePayApiError(err);
        assert.equal(problem.status, 503);
        assert.equal(problem.retryAfterSeconds, 1);
        assert.match(problem.detail, /^decryption_unavailable: /);
        // Handed over in the same turn, so held by the same thread: it fails with it (or was answered first).
        const sibling = await outcome(good);
        if (!('payment' in (sibling as object))) assert.equal((sibling as { code: string }).code, 'decryption_unavailable');
        assert.equal(threads.inFlight, 0);
        assert.equal((await threads.decrypt(seal(), [root], NOW)).details.pan, PAN);
      }
      assert.deepEqual(problems, ['the test asked this thread to fail']);
    } finally {
      await threads.close();
    }
  });

  it('close stops the threads: tokens held and later ones fail with decryption_unavailable', async () => {
    const threads = pool({ size: 2 });
    const held = Array.from({ length: 8 }, () => threads.decrypt(seal(), [root], NOW).then(() => 'decrypted', (err: GooglePayError) => err.code));
    await threads.close();
    // Handed over after close: refused at once. Each held one was answered before the stop, or failed by it.
    await rejectsGooglePay(() => threads.decrypt(seal(), [root], NOW), 'decryption_unavailable');
    for (const result of await Promise.all(held)) assert.ok(result === 'decrypted' || result === 'decryption_unavailable', result);
    assert.equal(threads.threads, 0);
    await threads.close();
  });

  it('a thread idle for idleMs stops, the next token starts another; one kept busy stays', async () => {
    const threads = pool({ idleMs: 200 });
    try {
      assert.equal((await threads.decrypt(seal(), [root], NOW)).details.pan, PAN);
      // Tokens closer together than idleMs: the thread is kept.
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 50));
        assert.equal((await threads.decrypt(seal(), [root], NOW)).details.pan, PAN);
        assert.equal(threads.threads, 1);
      }
      const stopped = Date.now() + 10_000;
      while (threads.threads > 0 && Date.now() < stopped) await new Promise((r) => setTimeout(r, 20));
      assert.equal(threads.threads, 0);
      assert.equal((await threads.decrypt(seal(), [root], NOW)).details.pan, PAN);
      assert.equal(threads.threads, 1);
    } finally {
      await threads.close();
    }
  });

  it('an idle thread does not keep the process alive, even never closed', async () => {
    const script = `
      import { DecryptPool } from ${JSON.stringify(path.resolve(import.meta.dirname, '../../src/google-pay/index.ts'))};
      import { NOW, root, seal, world } from ${JSON.stringify(path.resolve(import.meta.dirname, 'ecv2-setup.ts'))};
      const threads = new DecryptPool({ size: 1, privateKeys: [world.recipient.privateKey], recipientId: world.recipientId });
      const payment = await threads.decrypt(seal(), [root], NOW);
      console.log(payment.details.authMethod);
    `;
    // A file, not --eval: a thread inherits the process's options, and --input-type is refused for a file.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-decrypt-pool-'));
    const file = path.join(dir, 'never-closed.ts');
    fs.writeFileSync(file, script);
    const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise((resolve) => child.on('exit', (c, signal) => resolve(signal ?? c)));
    clearTimeout(timer);
    fs.rmSync(dir, { recursive: true, force: true });
    assert.equal(code, 0);
    assert.equal(out.trim(), 'PAN_ONLY');
  });

  it('decryptionUnavailable leads with the cause and says a retry may work', () => {
    const err = decryptionUnavailable('the thread stopped');
    assert.equal(err.code, 'decryption_unavailable');
    assert.match(err.message, /^the thread stopped; the request can be sent again$/);
  });
});
