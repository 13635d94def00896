/**
 * The Connection and Keep-Alive headers Coffer sends the destination. Both are hop-by-hop, so
 * a caller asks for them with SVC-PROXY-CONNECTION and SVC-PROXY-KEEP-ALIVE, and a request
 * transform may set them, within the same rules (docs/proxies.md).
 */
import { ApiError } from '../../http/errors.ts';
import { header } from './message.ts';

/** A Keep-Alive header's value (RFC 2068 §19.7.1): `name[=value]` parameters separated by commas. */
const KEEP_ALIVE_PARAMETERS = (() => {
  const token = String.raw`[!#$%&'*+\-.^_\`|~0-9A-Za-z]+`;
  const parameter = String.raw`${token}(?:=(?:${token}|"[^"\\]*"))?`;
  return new RegExp(String.raw`^${parameter}(?:[ \t]*,[ \t]*${parameter})*$`);
})();

/**
 * The pool manages the socket by `Connection: close` or `keep-alive`; any other token would
 * name a hop-by-hop header of Coffer's own connection. See docs/proxies.md.
 */
function connectionValue(value: string, invalid: () => ApiError): string {
  const v = value.trim().toLowerCase();
  if (v !== 'close' && v !== 'keep-alive') throw invalid();
  return v;
}

function keepAliveValue(value: string, invalid: () => ApiError): string {
  const v = value.trim();
  if (!KEEP_ALIVE_PARAMETERS.test(v)) throw invalid();
  return v;
}

/** Sets `connection` and `keep-alive` in `headers` (those forwarded) as the caller's SVC-PROXY-* headers ask. */
export function withCallerConnection(
  callerHeaders: Record<string, string | string[] | undefined>,
  headers: Record<string, string | string[]>,
): Record<string, string | string[]> {
  const connection = header(callerHeaders, 'svc-proxy-connection');
  if (connection !== undefined) {
    headers.connection = connectionValue(connection, () => ApiError.field('headers.svc-proxy-connection', 'SVC-PROXY-CONNECTION must be close or keep-alive'));
  }
  const keepAlive = header(callerHeaders, 'svc-proxy-keep-alive');
  if (keepAlive !== undefined) {
    headers['keep-alive'] = keepAliveValue(keepAlive, () =>
      ApiError.field('headers.svc-proxy-keep-alive', 'SVC-PROXY-KEEP-ALIVE must be a list of Keep-Alive parameters, such as timeout=5, max=100'),
    );
  }
  return headers;
}

/**
 * A request transform's headers, with `connection` and `keep-alive` held to the rules of
 * SVC-PROXY-CONNECTION and SVC-PROXY-KEEP-ALIVE: the transform may pass on or set what a
 * caller could ask for, nothing else.
 */
export function withConnectionChecked(headers: Record<string, string | string[]>): Record<string, string | string[]> {
  const single = (name: string, check: (value: string, invalid: () => ApiError) => string, rule: string) => {
    const value = headers[name];
    if (value === undefined) return;
    const invalid = () => new ApiError(422, `The request transform returned an invalid ${name} header: ${rule}.`);
    if (Array.isArray(value)) throw invalid();
    headers[name] = check(value, invalid);
  };
  single('connection', connectionValue, 'it must be close or keep-alive');
  single('keep-alive', keepAliveValue, 'it must be a list of Keep-Alive parameters, such as timeout=5, max=100');
  return headers;
}
