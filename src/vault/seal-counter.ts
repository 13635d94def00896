/**
 * Counts the values each data key seals in this process and hands the counts on in batches:
 * when a key has `every` unreported seals, every `intervalMs`, and on close. A report that
 * fails is added back and tried again with the next one, so counts are late, never lost
 * (but for a process that dies: its last batch, which the budget's margin absorbs).
 */
export class SealCounter {
  private readonly pending = new Map<string, { tenantId: string; keyId: string; n: number }>();
  private readonly report: (tenantId: string, keyId: string, n: number) => Promise<void>;
  private readonly every: number;
  private readonly intervalMs: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(report: (tenantId: string, keyId: string, n: number) => Promise<void>, opts: { every: number; intervalMs: number }) {
    this.report = report;
    this.every = opts.every;
    this.intervalMs = opts.intervalMs;
  }

  note(tenantId: string, keyId: string): void {
    const at = `${tenantId}/${keyId}`;
    let entry = this.pending.get(at);
    if (!entry) {
      entry = { tenantId, keyId, n: 0 };
      this.pending.set(at, entry);
    }
    entry.n++;
    if (entry.n >= this.every) void this.send(at);
    // Started by the first seal, so a process that never seals keeps no timer.
    this.timer ??= setInterval(() => void this.flush(), this.intervalMs).unref();
  }

  /** Reports every pending count. */
  async flush(): Promise<void> {
    await Promise.all([...this.pending.keys()].map((at) => this.send(at)));
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async send(at: string): Promise<void> {
    const entry = this.pending.get(at);
    if (!entry || entry.n === 0) return;
    // Seals made while this report is under way start a new entry.
    this.pending.delete(at);
    try {
      await this.report(entry.tenantId, entry.keyId, entry.n);
    } catch {
      const now = this.pending.get(at);
      if (now) now.n += entry.n;
      else this.pending.set(at, entry);
    }
  }
}
