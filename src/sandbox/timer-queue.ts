/**
 * A run's timers on the host: kept in the order they are due, with one Node timer for the
 * earliest. User code's timers are set by messages from the isolate, which the host may read
 * a few milliseconds apart when its event loop is busy; so each timer is due at the time user
 * code set it (the isolate's clock, which is this process's) plus its delay, and timers due
 * together fire in the order they were set, as the HTML standard has it, however late their
 * messages were read.
 */
export class TimerQueue {
  /** Sorted by due time, then by the order they were set. */
  #queue: { id: number; due: number; seq: number }[] = [];
  #seq = 0;
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Number.POSITIVE_INFINITY;
  readonly #fire: (id: number) => void;

  constructor(fire: (id: number) => void) {
    this.#fire = fire;
  }

  get size(): number {
    return this.#queue.length;
  }

  has(id: number): boolean {
    return this.#queue.some((t) => t.id === id);
  }

  /** Timer `id` is due at `due` (Date.now() time). */
  set(id: number, due: number): void {
    const entry = { id, due, seq: this.#seq++ };
    let i = this.#queue.length;
    while (i > 0 && this.#queue[i - 1].due > due) i--;
    this.#queue.splice(i, 0, entry);
    this.#arm();
  }

  /** false: no such timer. */
  delete(id: number): boolean {
    const i = this.#queue.findIndex((t) => t.id === id);
    if (i < 0) return false;
    this.#queue.splice(i, 1);
    this.#arm();
    return true;
  }

  clear(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#queue = [];
  }

  #arm(): void {
    const head = this.#queue[0];
    if (!head) {
      this.clear();
      return;
    }
    if (this.#timer && this.#armedFor <= head.due) return;
    clearTimeout(this.#timer);
    this.#armedFor = head.due;
    // Never early: a timer must not fire before its time (setTimeout's 1 ms floor aside).
    this.#timer = setTimeout(() => this.#due(), Math.min(Math.max(0, head.due - Date.now()), 2_147_483_647));
  }

  #due(): void {
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    const now = Date.now();
    while (this.#queue.length > 0 && this.#queue[0].due <= now) this.#fire(this.#queue.shift()!.id);
    this.#arm();
  }
}
