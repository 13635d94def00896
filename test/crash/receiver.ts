import http from 'node:http';

/**
 * The webhook endpoint of the crash test, on 127.0.0.1. It records each delivery's
 * `webhook-id` (the event id) with the server generation it arrived under, holds every
 * request a few milliseconds so that two runs of one job at once would overlap here, and
 * always answers 204.
 */
export type Receipt = { generation: number; at: number };

export class Receiver {
  /** Every delivery, by webhook-id. */
  readonly receipts = new Map<string, Receipt[]>();
  /** Deliveries of one webhook-id that arrived while another of the same id was still open. */
  overlaps = 0;
  /** Requests without a webhook-id or with a body that is not the event it names. */
  malformed = 0;
  /** Which `coffer serve` process is current; set by the test around each start. */
  generation = 0;
  private readonly open = new Map<string, number>();
  private server: http.Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = http.createServer((req, res) => {
      const id = req.headers['webhook-id'];
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (typeof id !== 'string' || !bodyNames(Buffer.concat(chunks).toString('utf8'), id)) {
          this.malformed++;
          res.writeHead(400).end();
          return;
        }
        const list = this.receipts.get(id) ?? [];
        list.push({ generation: this.generation, at: Date.now() });
        this.receipts.set(id, list);
        const open = this.open.get(id) ?? 0;
        if (open > 0) this.overlaps++;
        this.open.set(id, open + 1);
        setTimeout(() => {
          const n = (this.open.get(id) ?? 1) - 1;
          if (n > 0) this.open.set(id, n);
          else this.open.delete(id);
          res.writeHead(204).end();
        }, 2 + Math.floor(Math.random() * 8));
      });
    });
    this.server.keepAliveTimeout = 5000;
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as { port: number }).port}/hook`;
  }

  async close(): Promise<void> {
    if (!this.server) return;
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}

function bodyNames(body: string, id: string): boolean {
  try {
    const event = JSON.parse(body) as { id?: string; type?: string };
    return event.id === id && event.type === 'token.created';
  } catch {
    return false;
  }
}
