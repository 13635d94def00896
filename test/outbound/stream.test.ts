import assert from 'node:assert/strict';
import type http from 'node:http';
import { once } from 'node:events';
import { test } from 'node:test';
import { OutboundError } from '../../src/outbound/client.ts';
import { rejectsWith, startServer, trackClientsAndServers } from './helpers.ts';

const { client, server } = trackClientsAndServers();

async function streamError(body: NodeJS.ReadableStream): Promise<unknown> {
  try {
    for await (const _ of body) {
      // drain
    }
  } catch (err) {
    return err;
  }
  assert.fail('the stream ended without an error');
}

/** Reads a stream to its end. */
async function drain(body: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

test('stream delivers a large body chunk-wise, before the server has finished sending it', async () => {
  const CHUNK = 256 * 1024;
  const REST_CHUNKS = 48; // 12 MiB + the first chunk: more than request()'s default 10 MiB limit
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let finished = false;
  const s = await server(
    startServer(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.write(Buffer.alloc(CHUNK, 1));
      await released; // the rest only once the client has seen the first bytes
      for (let i = 0; i < REST_CHUNKS; i++) {
        if (!res.write(Buffer.alloc(CHUNK, 2))) await once(res, 'drain');
      }
      res.end(() => (finished = true));
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.stream({ url: `${s.origin}/big` });
  assert.equal(res.status, 200);
  assert.equal(res.headers['content-type'], 'application/octet-stream');
  assert.equal(res.url, `${s.origin}/big`);

  let total = 0;
  let chunks = 0;
  for await (const chunk of res.body) {
    if (chunks === 0) {
      assert.equal(finished, false);
      release();
    }
    chunks++;
    total += (chunk as Buffer).length;
  }
  assert.equal(total, CHUNK * (REST_CHUNKS + 1));
  assert.ok(chunks > 10, `expected many chunks, got ${chunks}`);
});

test('stream enforces maxResponseBytes only when the call sets it', async () => {
  const s = await server(
    startServer((req, res) => {
      if (req.url === '/declared') res.setHeader('content-length', String(64 * 1024));
      res.write(Buffer.alloc(32 * 1024));
      setTimeout(() => res.end(Buffer.alloc(32 * 1024)), 10);
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'], maxResponseBytes: 1024 });
  // The client-wide limit is for buffered requests; streams pass through.
  const open = await c.stream({ url: `${s.origin}/chunked` });
  let n = 0;
  for await (const chunk of open.body) n += (chunk as Buffer).length;
  assert.equal(n, 64 * 1024);

  const limited = await c.stream({ url: `${s.origin}/chunked`, maxResponseBytes: 40 * 1024 });
  const err = await streamError(limited.body);
  assert.ok(err instanceof OutboundError);
  assert.equal(err.code, 'too_large');
  await rejectsWith(c.stream({ url: `${s.origin}/declared`, maxResponseBytes: 40 * 1024 }), 'too_large');
});

test('the deadline keeps running while the body streams', async () => {
  const s = await server(
    startServer((_req, res) => {
      res.writeHead(200);
      res.write('first');
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });
  const started = Date.now();
  const res = await c.stream({ url: s.origin, timeoutMs: 300 });
  const err = await streamError(res.body);
  assert.ok(err instanceof OutboundError);
  assert.equal(err.code, 'timeout');
  assert.ok(Date.now() - started < 1500);
});

test('destroying the stream early releases the destination connection', async () => {
  let serverSawClose!: () => void;
  const closed = new Promise<void>((resolve) => (serverSawClose = resolve));
  const s = await server(
    startServer((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write(Buffer.alloc(16 * 1024)), 5);
      res.on('close', () => {
        clearInterval(timer);
        serverSawClose();
      });
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });
  const res = await c.stream({ url: s.origin, timeoutMs: 5000 });
  for await (const _ of res.body) break; // for-await's break destroys the stream
  await closed;
});

test('stream passes an explicit connection header; request() does not', async () => {
  const seen: http.IncomingHttpHeaders[] = [];
  const ports: number[] = [];
  const s = await server(
    startServer((req, res) => {
      seen.push(req.headers);
      ports.push(req.socket.remotePort!);
      res.end('ok');
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });

  await c.request({ url: s.origin, headers: { connection: 'close' } });
  assert.equal(seen[0].connection, 'keep-alive');

  const streamed = await c.stream({ url: s.origin, headers: { Connection: 'close', 'keep-alive': 'timeout=5', 'proxy-authorization': 'x' } });
  await drain(streamed.body);
  assert.equal(seen[1].connection, 'close');
  assert.equal(seen[1]['keep-alive'], 'timeout=5', 'sent through Node\'s client (keep-alive.test.ts)');
  assert.equal(seen[1]['proxy-authorization'], undefined);

  // `close` was honoured: that socket is gone, later calls never use it again.
  for (let i = 0; i < 3; i++) {
    await new Promise(setImmediate);
    const again = await c.stream({ url: s.origin });
    await drain(again.body);
  }
  assert.ok(!ports.slice(2).includes(ports[1]), `socket ${ports[1]} was reused: ${ports.join(',')}`);
  assert.equal(new Set(ports.slice(2)).size, 1, 'without close, the socket is reused');
});

test('stream refuses what request refuses', async () => {
  const s = await server(startServer((_req, res) => res.end('never')));
  const c = client({ allowlist: [] });
  await rejectsWith(c.stream({ url: s.origin }), 'blocked_address');
  await rejectsWith(c.stream({ url: 'ftp://example.com/' }), 'invalid_url');
  await rejectsWith(c.stream({ url: `http://localhost:${s.port}/` }), 'blocked_address');
  assert.equal(s.connections(), 0);
});

test('streamOrBuffer reads a body of declared length up to the bound whole, and streams any other', async () => {
  const s = await server(
    startServer((req, res) => {
      if (req.url === '/small') return void res.end(Buffer.alloc(100, 7));
      if (req.url === '/large') return void res.end(Buffer.alloc(2000, 8));
      // No content-length: chunked.
      res.write('part one, ');
      res.end('part two');
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });

  const small = await c.streamOrBuffer({ url: `${s.origin}/small` }, 1000);
  assert.equal(small.status, 200);
  assert.equal(small.headers['content-length'], '100');
  assert.ok(Buffer.isBuffer(small.body), 'read whole');
  assert.deepEqual(small.body, Buffer.alloc(100, 7));

  const large = await c.streamOrBuffer({ url: `${s.origin}/large` }, 1000);
  assert.ok(!Buffer.isBuffer(large.body), 'streamed: longer than the bound');
  assert.deepEqual(await drain(large.body), Buffer.alloc(2000, 8));

  const chunked = await c.streamOrBuffer({ url: `${s.origin}/chunked` }, 1000);
  assert.ok(!Buffer.isBuffer(chunked.body), 'streamed: no declared length');
  assert.equal((await drain(chunked.body)).toString(), 'part one, part two');
});

test('streamOrBuffer: a small body that stalls ends with the deadline; maxResponseBytes still applies', async () => {
  const s = await server(
    startServer((req, res) => {
      res.writeHead(200, { 'content-length': '10' });
      if (req.url === '/stall') return void res.write('12345');
      res.end('1234567890');
    }),
  );
  const c = client({ allowlist: ['127.0.0.1'] });
  const started = Date.now();
  await rejectsWith(c.streamOrBuffer({ url: `${s.origin}/stall`, timeoutMs: 300 }, 1000), 'timeout');
  assert.ok(Date.now() - started < 1500);
  await rejectsWith(c.streamOrBuffer({ url: `${s.origin}/whole`, maxResponseBytes: 5 }, 1000), 'too_large');
});

test('a declared length past the limit fails the call and leaves no error behind it (request, stream, streamOrBuffer)', async () => {
  // undici fails a request whose body is dropped unread with an 'error' on that body: with no
  // listener it would be an uncaught exception, which the test runner reports as a failure.
  const s = await server(startServer((_req, res) => res.end('1234567890')));
  const c = client({ allowlist: ['127.0.0.1'] });
  const req = { url: s.origin, maxResponseBytes: 5 };
  await rejectsWith(c.request(req), 'too_large');
  await rejectsWith(c.stream(req), 'too_large');
  await rejectsWith(c.streamOrBuffer(req, 1000), 'too_large');
  await new Promise((resolve) => setTimeout(resolve, 100));
});
