import { randomUUID } from 'node:crypto';
import { randomBytesPooled } from '../random.ts';

export const uuidv4 = (): string => randomUUID();

let lastMs = 0;
let counter = 0;

/**
 * UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then a 12-bit counter that restarts at
 * a random value each millisecond (method 3), so ids made by one process sort in creation
 * order even within a millisecond; the rest is random.
 */
export function uuidv7(): string {
  const b = randomBytesPooled(16);
  let ms = Date.now();
  if (ms > lastMs) {
    lastMs = ms;
    counter = b[6] & 0x07; // a small random start leaves room to count up
  } else {
    ms = lastMs;
    counter++;
    if (counter > 0xfff) {
      // 4096 ids in one millisecond: borrow the next one.
      lastMs = ms = lastMs + 1;
      counter = 0;
    }
  }
  for (let i = 0; i < 6; i++) b[i] = Math.floor(ms / 2 ** (8 * (5 - i))) & 0xff;
  b[6] = 0x70 | (counter >> 8);
  b[7] = counter & 0xff;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * The smallest UUIDv7 of millisecond `ms`: every id made before `ms` sorts below it, every id
 * made at or after it does not. Bounds a primary-key range scan by age.
 */
export function uuidv7Floor(ms: number): string {
  const h = Math.max(0, Math.floor(ms)).toString(16).padStart(12, '0').slice(-12);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}
