import type { Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';

/** Why a body could not be decompressed; messages name the coding and the limit, never the bytes. */
export class DecompressionError extends Error {
  /** `too_large`: the output passed the limit; `invalid`: not valid for its coding; `unsupported`: a coding this does not read. */
  readonly code: 'too_large' | 'invalid' | 'unsupported';
  readonly coding: string;

  constructor(code: DecompressionError['code'], coding: string, message: string) {
    super(message);
    this.name = 'DecompressionError';
    this.code = code;
    this.coding = coding;
  }
}

/** Larger pieces than zlib's 16 KiB default: fewer turns of the event loop per body. */
const CHUNK_BYTES = 64 * 1024;

/** Codings `decompress` reads: a Content-Encoding of one of them (none, or `identity`, is the body itself). */
const DECODERS: Record<string, () => Transform> = {
  gzip: () => createGunzip({ chunkSize: CHUNK_BYTES }),
  'x-gzip': () => createGunzip({ chunkSize: CHUNK_BYTES }),
  deflate: () => createInflate({ chunkSize: CHUNK_BYTES }),
  br: () => createBrotliDecompress({ chunkSize: CHUNK_BYTES }),
};

/**
 * A body as its Content-Encoding says to read it, at most `maxBytes` once decompressed.
 * A few hundred compressed bytes can stand for gigabytes (a decompression bomb), so the
 * output is counted as it comes, and the work stops the moment it passes the limit: it runs
 * as zlib streams, a piece at a time on libuv's thread pool, never as one blocking call
 * (the *Sync functions would hold the event loop, and every other request, until done).
 * Every place Coffer decompresses a body it did not make goes through here.
 */
export async function decompress(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  const coding = contentEncoding?.trim().toLowerCase() ?? '';
  if (coding === '' || coding === 'identity') return body;
  const make = Object.hasOwn(DECODERS, coding) ? DECODERS[coding] : undefined;
  if (!make) throw new DecompressionError('unsupported', coding.slice(0, 40), `the content encoding "${coding.slice(0, 40)}" is not one Coffer decompresses (gzip, deflate, br)`);
  const decoder = make();
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const fail = (err: DecompressionError) => {
      if (done) return;
      done = true;
      decoder.destroy();
      reject(err);
    };
    decoder.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) fail(new DecompressionError('too_large', coding, `the ${coding} body decompresses to more than ${maxBytes} bytes`));
      else chunks.push(chunk);
    });
    decoder.on('error', () => fail(new DecompressionError('invalid', coding, `the ${coding} body could not be decompressed`)));
    decoder.on('end', () => {
      if (done) return;
      done = true;
      resolve(Buffer.concat(chunks, size));
    });
    decoder.end(body);
  });
}
