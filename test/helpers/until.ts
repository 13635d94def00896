import { setTimeout as sleep } from 'node:timers/promises';

/** Polls `check` every 25 ms until it gives a truthy value, which it returns; throws naming `what` after `ms`. */
export async function until<T>(check: () => Promise<T | undefined | false> | T | undefined | false, what: string, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}
