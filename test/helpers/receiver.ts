import http from 'node:http';

export type ReceivedRequest = { path: string; method: string; headers: http.IncomingHttpHeaders; body: string; at: number };

/** A status, a status still to come, or 'hang': never answer, so the caller times out. */
export type Answer = number | Promise<number> | 'hang';

export type Receiver = Awaited<ReturnType<typeof startReceiver>>;

/**
 * A local HTTP server on 127.0.0.1 standing in for a customer endpoint (webhook, reactor
 * callback, a URL reactor code fetches): records every request, answers 200 unless told
 * otherwise for a path, with a JSON echo of the body and path and an `x-echo: yes` header
 * so code that reads the reply can prove it got this server's.
 */
export async function startReceiver() {
  const received: ReceivedRequest[] = [];
  const answers = new Map<string, (n: number) => Answer>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ path, method: req.method ?? '', headers: req.headers, body, at: Date.now() });
      const answer = (answers.get(path) ?? (() => 200))(received.filter((r) => r.path === path).length);
      if (answer === 'hang') return;
      void Promise.resolve(answer).then((status) =>
        res.writeHead(status, { 'content-type': 'application/json', 'x-echo': 'yes' }).end(JSON.stringify({ echoed: body, path })),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    at: (path: string) => received.filter((r) => r.path === path),
    /** How requests to `path` are answered, chosen by how many have come so far (this one included). */
    answer: (path: string, fn: (n: number) => Answer) => answers.set(path, fn),
    /** Requests to `path` get their 200 only once the returned function is called. */
    hold(path: string): () => void {
      let release!: () => void;
      const released = new Promise<number>((r) => (release = () => r(200)));
      answers.set(path, () => released);
      return release;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
