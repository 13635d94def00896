import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import { OutboundClient, OutboundError, type OutboundCode } from '../../src/outbound/client.ts';

export type TestServer = {
  port: number;
  /** http://127.0.0.1:<port> */
  origin: string;
  /** TCP connections accepted so far: proves whether the client connected at all. */
  connections: () => number;
  close: () => Promise<void>;
};

/** An HTTP (or, with `tls`, HTTPS) server on 127.0.0.1 — the only address tests may contact. */
export async function startServer(
  handler: http.RequestListener,
  tls?: { key: string; cert: string },
): Promise<TestServer> {
  const server = tls ? https.createServer({ key: tls.key, cert: tls.cert }, handler) : http.createServer(handler);
  let connections = 0;
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `${tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type SeenRequest = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string };

/** A loopback server that records each request, body read in full, before `respond` answers it. */
export async function startRecordingServer(
  respond: (req: http.IncomingMessage, res: http.ServerResponse) => void,
): Promise<TestServer & { seen: SeenRequest[] }> {
  const seen: SeenRequest[] = [];
  const server = await startServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() });
      respond(req, res);
    });
  });
  return Object.assign(server, { seen });
}

/** A bare TCP listener on 127.0.0.1 that accepts and never speaks: counts connection attempts. */
export async function startSilentServer(): Promise<TestServer> {
  const sockets = new Set<net.Socket>();
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * Clients and servers for one test file, all closed once its tests are done (call at the
 * file's top level): `client` builds an OutboundClient, `server` registers a server as it starts.
 */
export function trackClientsAndServers(): {
  client: (options: ConstructorParameters<typeof OutboundClient>[0]) => OutboundClient;
  server: <T extends TestServer>(started: Promise<T>) => Promise<T>;
} {
  const clients: OutboundClient[] = [];
  const servers: TestServer[] = [];
  after(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(servers.map((s) => s.close()));
  });
  return {
    client: (options) => {
      const c = new OutboundClient(options);
      clients.push(c);
      return c;
    },
    server: async (started) => {
      const s = await started;
      servers.push(s);
      return s;
    },
  };
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Asserts the promise rejects with an OutboundError of the given code; returns it. */
export async function rejectsWith(promise: Promise<unknown>, code: OutboundCode): Promise<OutboundError> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`);
    return err;
  }
  assert.fail(`expected OutboundError(${code}), but the call succeeded`);
}

export function throwsWith(fn: () => unknown, code: OutboundCode): OutboundError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof OutboundError, `expected an OutboundError, got ${String(err)}`);
    assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`);
    return err;
  }
  assert.fail(`expected OutboundError(${code}), but the call succeeded`);
}

/** A resolver for made-up names, so DNS tests never leave the machine. */
export function fakeResolver(table: Record<string, string[]>): {
  resolve: (hostname: string) => Promise<{ address: string; family: number }[]>;
  calls: string[];
} {
  const calls: string[] = [];
  return {
    calls,
    resolve: async (hostname) => {
      calls.push(hostname);
      const addresses = table[hostname];
      if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return addresses.map((address) => ({ address, family: net.isIP(address) }));
    },
  };
}
