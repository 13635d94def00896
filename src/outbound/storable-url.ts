import type { OutboundClient } from './client.ts';
import { OutboundError, refusalMessage } from './errors.ts';

export type StorableUrl = { ok: true; href: string } | { ok: false; message: string };

/**
 * A URL Coffer keeps to call later (a webhook, a proxy destination, a reactor callback), as
 * the outbound client will call it. Only where it points is checked here; what a name
 * resolves to is checked on every call. The answer is the URL as the client parses it, to
 * be stored and shown that way, so it never names one host and calls another
 * (`https:///x` is `https://x/`). The message, on failure, is written to be shown to callers.
 */
export function storableUrl(client: Pick<OutboundClient, 'validateUrl'>, url: string, maxLength: number): StorableUrl {
  // The URL parser silently drops tabs and newlines anywhere and spaces at either end
  // ("api.exa\tmple.com" is api.example.com): a URL holding them is a mistake to name.
  if (/[\u0000-\u0020\u007f]/.test(url)) return { ok: false, message: 'must not contain spaces, tabs, line breaks or other control characters' };
  try {
    const parsed = client.validateUrl(url);
    // A fragment is never sent (a proxy appends its path and query without it), so the URL
    // stored and shown is the one without it: the URL as it is called.
    parsed.hash = '';
    const href = parsed.href;
    // Normalising can lengthen it (an internationalised host, percent-encoded characters).
    if (href.length > maxLength) return { ok: false, message: `must be at most ${maxLength} characters once normalised` };
    return { ok: true, href };
  } catch (err) {
    if (!(err instanceof OutboundError)) throw err;
    return { ok: false, message: refusalMessage(err) };
  }
}
