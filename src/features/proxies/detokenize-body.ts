/**
 * The caller's request body with its detokenization expressions (`{{ <token id> … }}`) replaced,
 * by the /detokenize walk with token:use, before any transform sees it (docs/proxies.md).
 */
import type { Principal } from '../../access/principal.ts';
import { isTemplate } from '../../expressions/index.ts';
import { ApiError } from '../../http/errors.ts';
import type { Disclosure } from '../detokenize/disclosed.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import type { Live } from './live.ts';
import { asText, bodyKind, holdsTemplate, isEncoded, mayHoldExpressions, parseJson, utf8, type BodyKind } from './message.ts';

/**
 * Replaces detokenization expressions in JSON, text and form bodies with the
 * /detokenize walk (token:use). Bodies without any '{{' are passed on byte for byte.
 * Returns the bytes to forward and, for JSON, the parsed value (for the transform).
 * A compressed body is bytes: its '{{' would be chance, so it is forwarded as it came.
 * `disclosure` learns what the expressions rendered. `principal` detokenizes: the caller, or
 * for anonymous proxies the proxy's application (undefined when it has none).
 */
export async function detokenizeBody(
  detokenize: DetokenizeService,
  entry: Live,
  principal: Principal | undefined,
  contentType: string | undefined,
  contentEncoding: string | undefined,
  body: Buffer | undefined,
  disclosure: Disclosure,
): Promise<{ body: Buffer | undefined; kind: BodyKind; json?: unknown }> {
  const kind = isEncoded(contentEncoding) ? 'binary' : bodyKind(contentType);
  if (!body || body.length === 0 || kind === 'binary' || !mayHoldExpressions(body, kind)) return { body, kind };
  const detokenized = async (value: unknown): Promise<unknown> => {
    if (!principal) throw noDetokenizer(entry);
    return detokenize.detokenize(principal, value, { permission: 'token:use', at: 'body', disclosed: disclosure });
  };
  if (kind === 'json') {
    const parsed = parseJson(body);
    if (!principal && !holdsTemplate(parsed)) return { body, kind, json: parsed };
    const out = await detokenized(parsed);
    return out === parsed ? { body, kind, json: parsed } : { body: Buffer.from(JSON.stringify(out)), kind, json: out };
  }
  const text = utf8(body);
  if (kind === 'form') {
    const pairs = [...new URLSearchParams(text)];
    if (!pairs.some(([, v]) => isTemplate(v))) return { body, kind };
    const values = (await detokenized(pairs.map(([, v]) => v))) as unknown[];
    const form = new URLSearchParams();
    pairs.forEach(([name], i) => form.append(name, asText(values[i])));
    return { body: Buffer.from(form.toString()), kind };
  }
  if (!isTemplate(text)) return { body, kind };
  return { body: Buffer.from(asText(await detokenized(text))), kind };
}

/**
 * Why an anonymous proxy cannot detokenize. An application id that no longer finds a live
 * application is one that expired (a deleted one clears the id; the sweep then deletes the
 * expired one too): the caller did nothing wrong and cannot fix it, so it is a 403 that says so,
 * for the caller to pass on to the proxy's owner.
 */
function noDetokenizer(entry: Live): ApiError {
  if (entry.row.application_id) {
    return ApiError.forbidden('This proxy\'s application has expired, so it cannot detokenize expressions for anonymous callers; the proxy\'s owner must give it another application.');
  }
  return ApiError.field('body', 'holds detokenization expressions, but this proxy has no application to detokenize them with (anonymous proxies use their application\'s permissions)');
}
