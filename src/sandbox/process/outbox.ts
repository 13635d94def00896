/**
 * Messages over the IPC channel between the API process and a sandbox process, sent together:
 * those queued during one turn of the event loop go in one write at its end (setImmediate), as
 * a `batch`. Each write to the channel is a system call that wakes the other process, and under
 * load several runs start, or finish, in the same turn.
 */
export type Batch<M> = { t: 'batch'; messages: M[] };

export class Outbox<M> {
  #queue: M[] = [];
  readonly #send: (message: M | Batch<M>) => void;

  constructor(send: (message: M | Batch<M>) => void) {
    this.#send = send;
  }

  push(message: M): void {
    if (this.#queue.push(message) === 1) setImmediate(() => this.flush());
  }

  /** Sends what is queued now. */
  flush(): void {
    const queue = this.#queue;
    if (queue.length === 0) return;
    this.#queue = [];
    this.#send(queue.length === 1 ? queue[0] : { t: 'batch', messages: queue });
  }
}

/** Each message of `m`, in the order sent. */
export function unbatch<M>(m: M | Batch<M>): M[] {
  return (m as Batch<M>).t === 'batch' ? (m as Batch<M>).messages : [m as M];
}
