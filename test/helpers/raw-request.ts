import http from 'node:http';
import type { Response } from './http.ts';

/** One request exactly as written: fetch would normalise the path (`%79`, dot segments) and drop Connection. */
export function rawRequest(base: string, method: string, path: string, headers: Record<string, string>, body: string | Buffer = ''): Promise<Response> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) for (const x of [v ?? []].flat()) h.append(k, x);
        resolve({ status: res.statusCode!, headers: h, body: /json/.test(h.get('content-type') ?? '') && text ? JSON.parse(text) : undefined, text });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}
