/**
 * What a warm isolate holds of the host's memory, beyond what its memory limit bounds: its
 * measurement for the idle isolates' budget (./pool.ts), and the budgets of ICU memory that its
 * Intl objects may hold (runtime/intl.js counts it; V8's limit does not).
 */
import { discardPrepared, type Prepared } from './contexts.ts';
import type { WarmIsolate } from './pool.ts';

/**
 * A warm isolate is measured every this many runs (and after its first, and whenever its
 * context is replaced): the measurement is cheap, but a warm run otherwise needs none.
 */
const MEASURE_EVERY = 8;

/**
 * What `w` holds of the host's memory, for the warm isolates' budget (./pool.ts): its heap, its
 * external memory (array buffers) and its Intl objects' ICU memory (`intlKb`, the runtime's
 * estimate); undefined when no measurement is due. Synchronous: only for an idle isolate.
 */
export function measureIfDue(w: WarmIsolate, contextReplaced: boolean, intlKb: number): number | undefined {
  if (!contextReplaced && w.heldBytes > 0 && ++w.unmeasuredRuns < MEASURE_EVERY) return undefined;
  w.unmeasuredRuns = 0;
  try {
    const s = w.isolate.getHeapStatisticsSync();
    return s.total_physical_size + s.externally_allocated_size + intlKb * 1024;
  } catch {
    return undefined;
  }
}

/** The least ICU memory a context may hold: the locale methods' cache alone may take 2 MB (64 DateTimeFormats). */
const MIN_INTL_KB = 8 * 1024;

/**
 * ICU memory (KB, the runtime's estimate, see runtime/intl.js) the Intl objects of one context
 * may hold at once: half the isolate's memory limit (64 MB at the default 128 MB). The limit
 * does not count that memory, so without this a 16 MB isolate could hold 64 MB of the host's
 * in formatters. At least MIN_INTL_KB, so that the smallest isolate (8 MB) can still keep the
 * cache and a couple of hundred formatters of its own.
 */
export function intlBudgetKb(memoryMb: number): number {
  return Math.max(MIN_INTL_KB, memoryMb * 512);
}

/**
 * A clean run whose context holds more than this (half the runtime's budget, so it scales with
 * it) retires its isolate: a fixed figure above a small isolate's budget would never be reached,
 * and its code would meet the runtime's RangeError instead of a fresh isolate.
 */
export function recycleIntlKb(memoryMb: number): number {
  return intlBudgetKb(memoryMb) / 2;
}

/**
 * ICU memory of Intl objects (KB, the runtime's estimate, see runtime/intl.js) in the contexts
 * an isolate discarded. The runtime bounds what one context holds; a discarded context's objects
 * are garbage, but only V8's collector frees them, when it gets to them, and a fresh context
 * starts counting from zero: runs that each filled a context and left it unusable (a timer left
 * pending) piled up 500 MB in a 32 MB isolate. Past the bound, the isolate goes instead. A
 * quarter of the runtime's budget, so that with it an isolate holds at most 1.25 times its
 * budget whatever its memory limit: a fixed 16 MB would let a 16 MB isolate keep two full
 * discarded contexts besides its live one.
 */
export function maxDiscardedIntlKb(memoryMb: number): number {
  return intlBudgetKb(memoryMb) / 4;
}

/** Discards `p`, counting what its Intl objects hold; false: the isolate must go too. */
export async function discardCountingIntl(w: WarmIsolate, p: Prepared): Promise<boolean> {
  let kb: unknown;
  try {
    kb = await p.control.apply(undefined, ['intl'] as never[], { timeout: 1000 });
  } catch {
    kb = undefined;
  }
  discardPrepared(p);
  if (typeof kb !== 'number' || !(kb >= 0)) return false;
  w.discardedIntlKb += kb;
  return w.discardedIntlKb <= maxDiscardedIntlKb(w.memoryMb);
}
