import { randomFillSync } from 'node:crypto';

// Small random values (ids, IVs) are drawn from the CSPRNG a block at a time: one call per
// 4 KiB instead of one per value. Each value is copied out and its bytes wiped from the pool,
// so none is handed out twice or lingers.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let at = POOL_BYTES;

/** `n` (at most 256) fresh random bytes in a buffer of their own. */
export function randomBytesPooled(n: number): Buffer {
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new RangeError(`randomBytesPooled takes 1 to 256 bytes, not ${n}`);
  if (at + n > POOL_BYTES) {
    randomFillSync(pool);
    at = 0;
  }
  const out = Buffer.from(pool.subarray(at, at + n));
  pool.fill(0, at, at + n);
  at += n;
  return out;
}
