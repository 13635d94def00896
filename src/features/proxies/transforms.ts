/**
 * A proxy's transforms, each run in the sandbox: request and response code (with `bt` as the
 * proxy's application), and regex masks of a response. Their failures become proxy errors
 * carrying the sandbox's status.
 */
import type { Readable } from 'node:stream';
import type { Principal } from '../../access/principal.ts';
import { ApiError } from '../../http/errors.ts';
import type { Sandbox, SandboxFailure, SdkHost } from '../../sandbox/index.ts';
import type { Disclosure } from '../detokenize/disclosed.ts';
import type { DetokenizeService } from '../detokenize/service.ts';
import { createTokenSdk } from '../tokens/sdk.ts';
import type { TokenService } from '../tokens/service.ts';
import type { Live, LiveProxies } from './live.ts';
import { maskChaseStratusPan, REGEX_MASK_PROGRAM } from './masks.ts';
import { bodyKind, decodeContent, encodeBody, header, readAll, transformBody, transformHeaders, utf8, withoutHopByHop } from './message.ts';
import type { ResponseTransform } from './store.ts';

const MASK_TIMEOUT_MS = 2000;

export type Transforms = ReturnType<typeof createTransforms>;

export function createTransforms(deps: {
  sandbox: Sandbox;
  tokens: TokenService;
  detokenize: DetokenizeService;
  live: LiveProxies;
  /** A transform's time limit (the destination's deadline), ms. */
  timeoutMs: number;
  /** Largest destination response a response transform buffers. */
  maxBodyBytes: number;
  /** The most that response may decompress to. */
  maxDecompressedBytes: number;
}) {
  const { sandbox, tokens, detokenize, live } = deps;
  // JSON of a transform's input or output: the body (a response's decompressed) plus headers and the rest.
  const sandboxIoBytes = Math.max(1_048_576, 2 * Math.max(deps.maxBodyBytes, deps.maxDecompressedBytes) + 65_536);

  /** `bt` in transforms: the same methods as a reactor's, as the proxy's application (docs/reactors.md). */
  function sdkFor(principal: Principal, disclosure: Disclosure): SdkHost {
    return createTokenSdk(principal, tokens, detokenize.detokenize, disclosure.onBehalf());
  }

  /** Runs a code transform; failures become proxy errors carrying the sandbox's status. */
  async function runCode(entry: Live, which: 'request' | 'response', code: string, args: Record<string, unknown>, disclosure: Disclosure) {
    const app = await live.applicationOf(entry);
    const result = await sandbox.run({
      tenantId: entry.row.tenant_id,
      // Any change to the proxy starts its transforms afresh: module state is per version.
      cacheKey: `${entry.row.tenant_id}:proxy:${entry.row.id}:${(entry.row.modified_at ?? entry.row.created_at).getTime()}:${which}`,
      code,
      req: { args, configuration: entry.configuration },
      sdk: app ? sdkFor(app, disclosure) : undefined,
      limits: { timeoutMs: deps.timeoutMs, maxIoBytes: sandboxIoBytes },
      purpose: 'proxy_transform',
    });
    if (!result.ok) throw transformFailed(`The ${which} transform`, result.error);
    const value = result.value;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new ApiError(422, `The ${which} transform must return an object with body and headers.`);
    }
    const out = value as { body?: unknown; headers?: unknown };
    return { body: out.body, headers: out.headers === undefined ? undefined : transformHeaders(out.headers, which) };
  }

  /** Regex masks run in the sandbox: a tenant's expression must not stall the process (catastrophic backtracking). */
  async function maskRegex(entry: Live, text: string, expression: string, replacement: string): Promise<string> {
    const result = await sandbox.run({
      tenantId: entry.row.tenant_id,
      cacheKey: `${entry.row.tenant_id}:proxy-mask`,
      code: REGEX_MASK_PROGRAM,
      req: { args: { text, expression, replacement } },
      limits: { timeoutMs: MASK_TIMEOUT_MS, maxIoBytes: sandboxIoBytes },
      purpose: 'proxy_mask',
    });
    if (!result.ok) {
      if (result.error.kind === 'timeout') throw new ApiError(422, `The mask expression did not finish within ${MASK_TIMEOUT_MS} ms on this response.`);
      throw transformFailed('The mask', result.error);
    }
    return result.value as string;
  }

  return {
    /** The request transform's body and headers; undefined ones leave the request's as they were. */
    request(entry: Live, code: string, args: Record<string, unknown>, disclosure: Disclosure) {
      return runCode(entry, 'request', code, args, disclosure);
    },

    /**
     * The destination's answer as the response transform makes it: the body read whole and
     * decompressed, then masked or handed to the code. `headers` are the answer's without its
     * hop-by-hop headers.
     */
    async response(
      entry: Live,
      transform: ResponseTransform,
      headers: Record<string, string | string[]>,
      body: Readable | Buffer,
      disclosure: Disclosure,
    ): Promise<{ headers: Record<string, string | string[]>; body: Buffer }> {
      let raw = await readAll(body, deps.maxBodyBytes, deps.timeoutMs);
      raw = await decodeContent(raw, headers, deps.maxDecompressedBytes);
      delete headers['content-encoding'];
      delete headers['content-length'];
      if (transform.type === 'mask') {
        const text = utf8(raw, 502);
        const masked = transform.matcher === 'regex' ? await maskRegex(entry, text, transform.expression, transform.replacement) : maskChaseStratusPan(text, transform.replacement);
        return { headers, body: Buffer.from(masked) };
      }
      const out = await runCode(entry, 'response', transform.code, { body: transformBody(bodyKind(header(headers, 'content-type')), raw, undefined, 'destination'), headers }, disclosure);
      const finalHeaders = out.headers ? withoutHopByHop(out.headers, true) : headers;
      const encoded = out.body === undefined ? raw : encodeBody(out.body, finalHeaders);
      return { headers: finalHeaders, body: encoded ?? Buffer.alloc(0) };
    },
  };
}

function transformFailed(what: string, f: SandboxFailure): ApiError {
  if (f.kind === 'busy') {
    const busy = new ApiError(429, `${what} could not run: too many transforms and reactors of this tenant are in progress; retry shortly.`);
    busy.retryAfterSeconds = 1;
    return busy;
  }
  const status = f.status >= 400 && f.status <= 599 ? f.status : 500;
  return new ApiError(status, `${what} failed: ${f.detail}`);
}
