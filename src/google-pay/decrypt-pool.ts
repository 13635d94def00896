import type { KeyObject } from 'node:crypto';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { GooglePayError, type GooglePayErrorCode } from './errors.ts';
import type { GooglePayPayment } from './payload.ts';
import type { RootKey } from './root-keys.ts';

/**
 * ECv2 decryption off the event loop: a few worker threads (GOOGLE_PAY_DECRYPT_THREADS) each
 * running decrypt-worker.ts, which verifies the message signature, does the ECDH, HKDF, tag
 * check and AES and reads the payment. The event loop checks the token's shape and gets the
 * root keys (decryptor.ts), hands the token over and gets a payment or a GooglePayError back.
 *
 * Tokens handed over in one turn of the event loop go to a thread in one message, and come
 * back in one: a message wakes a thread, and on a busy host each wake-up costs more than the
 * copy of a token. Threads start on first use; an idle one does not keep the process alive,
 * and one idle for `idleMs` stops: its isolate holds ~30 MB of the process's memory, which a
 * burst of tokens should not leave behind for good (the next token starts one again, ~30 ms).
 * A thread that fails fails only the tokens it held (decryption_unavailable, 503 with a short
 * Retry-After), and the next token starts another in its place.
 */

/** What a thread is started with: Coffer's private keys (KeyObjects are copied between threads as keys, never as text). */
export type DecryptWorkerData = { privateKeys: KeyObject[]; recipientId: string };
/** A root key as sent to a thread: once per thread, then named by its id. */
export type RootKeyEntry = RootKey & { id: number };
export type DecryptJob = { id: number; token: Record<string, unknown>; now: number; roots: number[] };
export type DecryptBatch = { jobs: DecryptJob[]; roots?: RootKeyEntry[] };
export type DecryptOutcome =
  | { id: number; payment: GooglePayPayment }
  | { id: number; error: { code: GooglePayErrorCode; message: string; field: string | undefined } }
  /** Not a GooglePayError: a bug, answered as a 500. */
  | { id: number; fault: string };

/** GOOGLE_PAY_DECRYPT_THREADS' default: one core left to the event loop, at most 4. */
export function defaultDecryptThreads(): number {
  return Math.max(1, Math.min(4, os.availableParallelism() - 1));
}

export type DecryptPoolOptions = {
  /** Threads at most (1 or more). */
  size: number;
  privateKeys: readonly KeyObject[];
  recipientId: string;
  /** The thread's module; tests put one of their own in front of decrypt-worker.ts. */
  script?: URL;
  /** Told when a thread fails (its error's message, never a token or a key); the held tokens are failed anyway. */
  onThreadError?: (message: string) => void;
  /** A thread that has held no token for this long stops (default IDLE_MS). */
  idleMs?: number;
};

/** How long an idle thread is kept by default. */
export const IDLE_MS = 30_000;

type Pending = { resolve: (payment: GooglePayPayment) => void; reject: (err: Error) => void };

type Thread = {
  worker: Worker;
  /** Handed over and not yet answered, by job id. */
  held: Map<number, Pending>;
  /** Waiting for this turn's message. */
  queue: DecryptJob[];
  /** Root keys to send with that message; `known` are those sent before. */
  roots: RootKeyEntry[];
  known: Set<number>;
  flushing: boolean;
  exited: boolean;
  /** Stops the thread once it has been idle for idleMs; set while it holds nothing. */
  idle: NodeJS.Timeout | undefined;
};

const WORKER_SCRIPT = new URL('./decrypt-worker.ts', import.meta.url);

export function decryptionUnavailable(why: string): GooglePayError {
  return new GooglePayError('decryption_unavailable', `${why}; the request can be sent again`);
}

export class DecryptPool {
  readonly size: number;
  readonly #options: DecryptPoolOptions;
  readonly #slots: (Thread | undefined)[];
  readonly #rootIds = new WeakMap<RootKey, number>();
  #nextRootId = 1;
  #nextJobId = 1;
  #closed = false;

  constructor(options: DecryptPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) throw new RangeError('a decryption pool needs at least one thread');
    this.size = options.size;
    this.#options = options;
    this.#slots = Array.from({ length: options.size }, () => undefined);
  }

  /** Threads running now (they start on first use). */
  get threads(): number {
    return this.#slots.filter((t) => t !== undefined).length;
  }

  /** Tokens handed over and not yet answered. */
  get inFlight(): number {
    return this.#slots.reduce((n, t) => n + (t?.held.size ?? 0), 0);
  }

  /** decryptEcv2 of `token` with `rootKeys` at `now`, on a thread; rejects with what decryptEcv2 would throw. */
  decrypt(token: Record<string, unknown>, rootKeys: readonly RootKey[], now: number): Promise<GooglePayPayment> {
    if (this.#closed) return Promise.reject(decryptionUnavailable('Google Pay decryption has stopped (Coffer is shutting down)'));
    const thread = this.#pick();
    const roots: number[] = [];
    for (const root of rootKeys) {
      let id = this.#rootIds.get(root);
      if (id === undefined) this.#rootIds.set(root, (id = this.#nextRootId++));
      roots.push(id);
      if (!thread.known.has(id)) {
        thread.known.add(id);
        thread.roots.push({ id, protocolVersion: root.protocolVersion, keyExpiration: root.keyExpiration, key: root.key });
      }
    }
    const id = this.#nextJobId++;
    return new Promise<GooglePayPayment>((resolve, reject) => {
      if (thread.held.size === 0) {
        thread.worker.ref();
        clearTimeout(thread.idle);
        thread.idle = undefined;
      }
      thread.held.set(id, { resolve, reject });
      thread.queue.push({ id, token, now, roots });
      if (!thread.flushing) {
        thread.flushing = true;
        setImmediate(() => this.#flush(thread));
      }
    });
  }

  /** Stops every thread; what they held is failed (decryption_unavailable). */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all(this.#slots.map((t) => t?.worker.terminate()));
  }

  /** The thread with the fewest tokens held; an idle running one before starting one, a new one before queueing behind a busy one. */
  #pick(): Thread {
    let best = -1;
    let load = Infinity;
    this.#slots.forEach((thread, i) => {
      const l = thread ? thread.held.size : 0.5;
      if (l < load) {
        best = i;
        load = l;
      }
    });
    return (this.#slots[best] ??= this.#start(best));
  }

  #start(slot: number): Thread {
    const workerData: DecryptWorkerData = { privateKeys: [...this.#options.privateKeys], recipientId: this.#options.recipientId };
    const worker = new Worker(this.#options.script ?? WORKER_SCRIPT, { workerData, name: 'google-pay-decrypt' });
    // Held only while it holds tokens: an idle thread must not keep the process (or a test) alive.
    worker.unref();
    const thread: Thread = { worker, held: new Map(), queue: [], roots: [], known: new Set(), flushing: false, exited: false, idle: undefined };
    worker.on('message', (outcomes: DecryptOutcome[]) => this.#answer(thread, outcomes));
    worker.on('error', (err) => this.#options.onThreadError?.(err instanceof Error ? err.message : String(err)));
    worker.on('exit', () => {
      thread.exited = true;
      clearTimeout(thread.idle);
      if (this.#slots[slot] === thread) this.#slots[slot] = undefined;
      const why = this.#closed ? 'Google Pay decryption has stopped (Coffer is shutting down)' : 'the thread decrypting this Google Pay token stopped before it answered';
      this.#fail(thread, [...thread.held.keys()], () => decryptionUnavailable(why));
    });
    return thread;
  }

  #flush(thread: Thread): void {
    thread.flushing = false;
    const jobs = thread.queue;
    const roots = thread.roots;
    thread.queue = [];
    thread.roots = [];
    if (jobs.length === 0 || thread.exited) return;
    try {
      thread.worker.postMessage(roots.length > 0 ? { jobs, roots } : { jobs } satisfies DecryptBatch);
    } catch (err) {
      // A token that cannot be copied (never one read from JSON): those tokens fail, the thread goes on.
      for (const root of roots) thread.known.delete(root.id);
      const message = err instanceof Error ? err.message : String(err);
      this.#fail(thread, jobs.map((j) => j.id), () => new Error(`could not hand a Google Pay token to its decryption thread: ${message}`));
    }
  }

  #answer(thread: Thread, outcomes: DecryptOutcome[]): void {
    for (const outcome of outcomes) {
      const pending = thread.held.get(outcome.id);
      if (!pending) continue;
      thread.held.delete(outcome.id);
      if ('payment' in outcome) pending.resolve(outcome.payment);
      else if ('error' in outcome) pending.reject(new GooglePayError(outcome.error.code, outcome.error.message, outcome.error.field));
      else pending.reject(new Error(`Google Pay decryption failed: ${outcome.fault}`));
    }
    this.#idleIfEmpty(thread);
  }

  #fail(thread: Thread, ids: number[], error: () => Error): void {
    for (const id of ids) {
      const pending = thread.held.get(id);
      if (!pending) continue;
      thread.held.delete(id);
      pending.reject(error());
    }
    this.#idleIfEmpty(thread);
  }

  /**
   * A thread that holds nothing no longer keeps the process alive, and stops after idleMs unless
   * a token comes first (decrypt clears the timer). It leaves its slot before it stops, so the
   * next token starts a new thread rather than queueing for one on its way out.
   */
  #idleIfEmpty(thread: Thread): void {
    if (thread.held.size > 0 || thread.exited) return;
    thread.worker.unref();
    clearTimeout(thread.idle);
    // decrypt() and the thread's exit clear the timer: when it fires, the thread is idle and running.
    thread.idle = setTimeout(() => {
      thread.idle = undefined;
      const slot = this.#slots.indexOf(thread);
      if (slot >= 0) this.#slots[slot] = undefined;
      void thread.worker.terminate();
    }, this.#options.idleMs ?? IDLE_MS).unref();
  }
}
