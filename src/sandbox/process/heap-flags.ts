/**
 * V8's heap flags of a sandbox process. Its own heap gets the API process's (bin/coffer.js,
 * docs/decisions.md): without them, 120,000 warm runs grew it to ~150 MB around 10–40 MB in
 * use, and the process to ~265 MB instead of ~165.
 *
 * V8's flags are the whole process's, though, and isolates read the young generation's size
 * when they are made: with `--max-semi-space-size=8` every isolate's young generation would be
 * 3 × 8 MB on top of its memory limit (a 16 MB isolate's heap limit 40 MB instead of 19).
 * isolateHeapDefaults() sets it back to V8's default (0: sized from each isolate's own limit)
 * once the process's own heap is made, before any isolate is. The other two flags act at
 * collection time, in the isolates too: their old generations are collected sooner, within
 * the same limits.
 */
import v8 from 'node:v8';

export const HEAP_FLAGS = ['--max-semi-space-size=8', '--heap-growing-percent=50', '--no-allocation-site-pretenuring'];

export function isolateHeapDefaults(): void {
  v8.setFlagsFromString('--max-semi-space-size=0');
}
