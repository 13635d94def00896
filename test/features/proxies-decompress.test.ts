import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { brotliCompressSync, constants, deflateSync, gzipSync } from 'node:zlib';
import { decompress, DecompressionError } from '../../src/outbound/decompress.ts';
import { call } from '../helpers/http.ts';
import { rememberSecret, startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * A response transform reads the destination's body decompressed: a few hundred compressed
 * bytes can stand for gigabytes, so decompression streams, off the event loop, and stops at
 * PROXY_MAX_DECOMPRESSED_BYTES with a proxy_error naming it.
 */

const MIB = 1024 * 1024;
const LIMIT = 128 * 1024;

/** 256 MiB of zeros in about 400 bytes (quality 5 makes it in a fraction of a second). */
const brBomb = brotliCompressSync(Buffer.alloc(256 * MIB), { params: { [constants.BROTLI_PARAM_QUALITY]: 5, [constants.BROTLI_PARAM_SIZE_HINT]: 256 * MIB } });
/** 64 MiB of zeros in about 64 KiB: within PROXY_MAX_BODY_BYTES, so only the decompressed size can stop it. */
const gzipBomb = gzipSync(Buffer.alloc(64 * MIB), { level: 9 });

describe('proxies: compressed destination responses and response transforms', () => {
  let server: TestServer;
  let dest: http.Server;
  let port = 0;

  before(async () => {
    dest = http.createServer((req, res) => {
      const answers: Record<string, [string, Buffer]> = {
        '/p/br-bomb': ['br', brBomb],
        '/p/gzip-bomb': ['gzip', gzipBomb],
        '/p/br': ['br', brotliCompressSync('{"pan":"4000056655665556"}')],
        '/p/deflate': ['deflate', deflateSync('{"pan":"4000056655665556"}')],
        '/p/broken': ['gzip', Buffer.from('not gzip at all')],
        '/p/fits': ['gzip', gzipSync(Buffer.alloc(LIMIT, 'a'))],
      };
      const [coding, body] = answers[req.url!] ?? ['identity', Buffer.from('{}')];
      res.writeHead(200, { 'content-type': req.url === '/p/fits' ? 'text/plain' : 'application/json', 'content-encoding': coding, 'content-length': String(body.length) });
      res.end(body);
    });
    await new Promise<void>((r) => dest.listen(0, '127.0.0.1', r));
    port = (dest.address() as { port: number }).port;
    rememberSecret('4000056655665556');
    server = await startTestServer({ OUTBOUND_ALLOWLIST: '127.0.0.1', PROXY_MAX_BODY_BYTES: String(LIMIT), PROXY_TIMEOUT_MS: '10000', WORKERS: '0' });
    assert.ok(gzipBomb.length < LIMIT, 'the gzip bomb itself is within PROXY_MAX_BODY_BYTES');
  });
  after(async () => {
    await server?.stop();
    dest?.closeAllConnections();
    await new Promise((r) => dest?.close(r));
  });

  async function proxy(response_transform: Record<string, unknown>): Promise<string> {
    const res = await call(server, 'POST', '/proxies', {
      key: server.key,
      body: { name: 'compressed', destination_url: `http://127.0.0.1:${port}/p`, require_auth: false, response_transform },
    });
    assert.equal(res.status, 201, res.text);
    rememberSecret(res.body.key);
    return res.body.key;
  }

  const code = { type: 'code', code: 'module.exports = async (req) => ({ body: req.args.body, headers: req.args.headers })' };
  const mask = { type: 'mask', matcher: 'regex', expression: '(\\d{12})\\d{4}', replacement: '*' };

  it('a brotli or gzip bomb is a 502 proxy_error naming the limit, for code and mask transforms, and the server keeps answering', async () => {
    for (const transform of [code, mask]) {
      const key = await proxy(transform);
      for (const [path, coding] of [['/br-bomb', 'br'], ['/gzip-bomb', 'gzip']]) {
        const [bomb, ping] = await Promise.all([call(server, 'GET', `/proxy${path}`, { headers: { 'svc-proxy-key': key } }), call(server, 'GET', '/ping')]);
        assert.equal(ping.status, 200, 'other requests are served while the bomb is refused');
        assert.equal(bomb.status, 502, bomb.text);
        assert.equal(bomb.headers.get('svc-proxy-destination-status'), null);
        assert.equal(
          bomb.body.proxy_error.detail,
          `The destination's ${coding} response decompresses to more than ${LIMIT} bytes (PROXY_MAX_DECOMPRESSED_BYTES), the most a response transform takes.`,
        );
      }
    }
  });

  it('a body that decompresses to exactly the limit, and br and deflate bodies, are read', async () => {
    const key = await proxy(code);
    const fits = await call(server, 'GET', '/proxy/fits', { headers: { 'svc-proxy-key': key } });
    assert.equal(fits.status, 200, fits.text.slice(0, 300));
    assert.equal(fits.text, 'a'.repeat(LIMIT));
    assert.equal(fits.headers.get('content-encoding'), null);
    const masked = await proxy(mask);
    for (const path of ['/br', '/deflate']) {
      const res = await call(server, 'GET', `/proxy${path}`, { headers: { 'svc-proxy-key': masked } });
      assert.equal(res.status, 200, res.text);
      assert.equal(res.text, '{"pan":"************5556"}');
    }
  });

  it('a body its coding cannot read is a 502', async () => {
    const key = await proxy(code);
    const res = await call(server, 'GET', '/proxy/broken', { headers: { 'svc-proxy-key': key } });
    assert.equal(res.status, 502, res.text);
    assert.match(res.body.proxy_error.detail, /gzip response body could not be decoded/);
  });
});

describe('decompress', () => {
  it('stops at the limit whatever the coding; identity and no coding are the body itself', async () => {
    // 1 GiB of zeros as 16 gzip members of 64 MiB (a multi-member body is one gzip body).
    const huge = Buffer.concat(Array(16).fill(gzipBomb));
    for (const [body, coding] of [[huge, 'gzip'], [huge, ' X-GZIP '], [brBomb, 'br'], [deflateSync(Buffer.alloc(4 * MIB)), 'deflate']] as const) {
      await assert.rejects(decompress(body, coding, MIB), (err: unknown) => {
        assert.ok(err instanceof DecompressionError);
        assert.equal(err.code, 'too_large');
        assert.match(err.message, /decompresses to more than 1048576 bytes/);
        return true;
      });
    }
    const plain = Buffer.from('plain');
    assert.equal(await decompress(plain, undefined, 1), plain);
    assert.equal(await decompress(plain, 'identity', 1), plain);
    assert.deepEqual(await decompress(gzipSync('abc'), 'gzip', 3), Buffer.from('abc'));
  });

  it('names a coding it does not read, and one that does not decode', async () => {
    await assert.rejects(decompress(Buffer.from('x'), 'zstd', MIB), (err: unknown) => err instanceof DecompressionError && err.code === 'unsupported');
    await assert.rejects(decompress(Buffer.from('x'), 'gzip, br', MIB), (err: unknown) => err instanceof DecompressionError && err.code === 'unsupported');
    await assert.rejects(decompress(Buffer.from('not brotli'), 'br', MIB), (err: unknown) => err instanceof DecompressionError && err.code === 'invalid');
  });
});
