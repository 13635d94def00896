import { ApiError, type FieldErrors } from '../../http/errors.ts';
import type { ShownData } from '../../http/idempotency.ts';

/** What a disclosed value becomes in an error. */
export const REDACTED = '[redacted]';

/**
 * Shorter values are not scrubbed: a month of "12" or a "1" would take digits out of every
 * message (line numbers, statuses, limits) while showing next to nothing. A cvc of 3 is.
 */
export const MIN_SCRUBBED_LENGTH = 3;

/**
 * The characters of distinct values one run keeps track of. A run can be handed far more (a
 * reactor paging through tokens with `bt.tokens.list`), and every value kept is memory held
 * until the run is over: past this, its errors are withheld whole instead (see scrub).
 */
export const MAX_TRACKED_CHARS = 4 * 1024 * 1024;

/** What JSON.stringify writes escaped: a quote, a backslash, a control character, a surrogate (when alone). */
const JSON_ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** How a token's data was shown to the code: the permission, and its transform then. */
export type Access = { permission: string; transform: string };

/** Where a detokenization tells what it handed out (DetokenizeService.detokenize's `disclosed`). */
export type DisclosureSink = {
  /** One expression's output, as it rendered. */
  rendered(value: unknown): void;
  /**
   * A token whose data (as the transform showed it) the code was handed. `access`: the
   * caller's, which a stored reply is checked against again; none when another principal
   * (the reactor's or proxy's application, through `bt`) read it. No id: data the code
   * itself made a token of, kept only to scrub.
   */
  token(id: string | undefined, data: unknown, access?: Access): void;
};

/** A Disclosure as stored with a queued run (sealed with its arguments). */
export type DisclosureJson = { values: string[]; shown: ShownData[]; overflowed?: true };

/**
 * Everything of token data that user code (a reactor, a proxy transform) was handed for one
 * run: the exact output of every expression, and the leaf values of every token's data it
 * came from, so that what the run reports back is scrubbed of them, however the code put
 * them into a message; and the tokens, so that a stored reply showing the run's output is
 * shown again only while they may still be used.
 *
 * Scrubbing catches the values as they were handed over, anywhere in a message (inside other
 * text too, and as JSON escapes them). It cannot catch a value the code changed first (cut,
 * reversed, upper-cased), nor values shorter than MIN_SCRUBBED_LENGTH: it keeps an ordinary
 * error from echoing data to a caller who may only use it, and is no bound on code written to
 * leak (which can return the data in `raw` anyway).
 */
export class Disclosure implements DisclosureSink {
  readonly #values = new Set<string>();
  readonly #tokens = new Map<string, Access | undefined>();
  #chars = 0;
  /** More was handed over than MAX_TRACKED_CHARS: no text the run reports can be trusted to be scrubbed. */
  #overflowed = false;

  rendered(value: unknown): void {
    // An object or array is token data (or a whole token), whose leaves token() adds: the
    // whole-token form's id, type and containers are no secret to scrub.
    if (typeof value === 'string' || typeof value === 'number') this.#add(String(value));
  }

  token(id: string | undefined, data: unknown, access?: Access): void {
    // The caller's access is the one to check again; another principal's read adds nothing to it.
    if (id !== undefined && (!this.#tokens.has(id) || access)) this.#tokens.set(id, access ?? this.#tokens.get(id));
    this.#leaves(data);
  }

  /** The sink for what another principal reads during the run (`bt`): its values, none of its access. */
  onBehalf(): DisclosureSink {
    return { rendered: (v) => this.rendered(v), token: (id, data) => this.token(id, data) };
  }

  /**
   * The tokens whose data the run was handed, as a stored reply records them (see
   * src/http/idempotency.ts): the caller's with the access to find again, the others' only
   * as tokens that must still exist.
   */
  shown(): ShownData[] {
    return [...this.#tokens].map(([tokenId, access]) => ({ tokenId, access: access ? [access] : [] }));
  }

  /** `text` with every disclosed value in it replaced by REDACTED (all of it, past MAX_TRACKED_CHARS). */
  scrub(text: string): string {
    if (this.#overflowed && typeof text === 'string' && text !== '') return REDACTED;
    if (this.#values.size === 0 || typeof text !== 'string' || text.length < MIN_SCRUBBED_LENGTH) return text;
    const ranges: [number, number][] = [];
    for (const v of this.#values) {
      if (v.length > text.length) continue;
      for (let i = text.indexOf(v); i !== -1; i = text.indexOf(v, i + 1)) ranges.push([i, i + v.length]);
    }
    if (ranges.length === 0) return text;
    // Overlapping and adjacent occurrences become one marker.
    ranges.sort((a, b) => a[0] - b[0]);
    let out = '';
    let at = 0;
    let [start, end] = ranges[0];
    for (const [s, e] of ranges) {
      if (s <= end) end = Math.max(end, e);
      else {
        out += text.slice(at, start) + REDACTED;
        at = end;
        [start, end] = [s, e];
      }
    }
    return out + text.slice(at, start) + REDACTED + text.slice(end);
  }

  /** A JSON value with every string (keys too) scrubbed, and numbers that spell a disclosed value replaced. */
  scrubValue(value: unknown): unknown {
    if (this.#values.size === 0 && !this.#overflowed) return value;
    if (typeof value === 'string') return this.scrub(value);
    if (typeof value === 'number') return this.scrub(String(value)) === String(value) ? value : REDACTED;
    if (Array.isArray(value)) return value.map((v) => this.scrubValue(v));
    if (value !== null && typeof value === 'object') {
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [this.scrub(k), this.scrubValue(v)]));
    }
    return value;
  }

  /** A failure (a run's problem) with its detail, field errors and data scrubbed. */
  scrubFailure<F extends { detail: string; errors?: FieldErrors; data?: unknown }>(f: F): F {
    if (this.#values.size === 0 && !this.#overflowed) return f;
    const out: F = { ...f, detail: this.scrub(f.detail) };
    if (f.errors !== undefined) out.errors = this.scrubValue(f.errors) as FieldErrors;
    if (f.data !== undefined) out.data = this.scrubValue(f.data);
    return out;
  }

  /** An ApiError as a copy scrubbed of disclosed values (the same one when it holds none); anything else as it is. */
  scrubError(err: unknown): unknown {
    if (!(err instanceof ApiError) || (this.#values.size === 0 && !this.#overflowed)) return err;
    const scrubbed = this.scrubFailure({ detail: err.detail, errors: err.errors });
    if (scrubbed.detail === err.detail && JSON.stringify(scrubbed.errors) === JSON.stringify(err.errors)) return err;
    const copy = new ApiError(err.status, scrubbed.detail, scrubbed.errors);
    copy.retryAfterSeconds = err.retryAfterSeconds;
    return copy;
  }

  toJSON(): DisclosureJson {
    return this.#overflowed ? { values: [], shown: this.shown(), overflowed: true } : { values: [...this.#values], shown: this.shown() };
  }

  /** Every value in `data`, to scrub, and no token: all that is known of a run queued before disclosures were kept. */
  static ofValues(data: unknown): Disclosure {
    const d = new Disclosure();
    d.token(undefined, data);
    return d;
  }

  static fromJSON(json: DisclosureJson): Disclosure {
    const d = new Disclosure();
    for (const v of json.values) d.#add(v);
    for (const s of json.shown) d.#tokens.set(s.tokenId, s.access[0] as Access | undefined);
    if (json.overflowed) d.#overflow();
    return d;
  }

  #add(value: string): void {
    if (value.length < MIN_SCRUBBED_LENGTH || this.#overflowed || this.#values.has(value)) return;
    if ((this.#chars += value.length) > MAX_TRACKED_CHARS) return this.#overflow();
    this.#values.add(value);
    // As JSON.stringify writes it into a message (a quote, a backslash, a line break escaped);
    // most values hold nothing JSON escapes, and are not stringified to find that out.
    if (!JSON_ESCAPED.test(value)) return;
    const escaped = JSON.stringify(value).slice(1, -1);
    if (escaped !== value) this.#add(escaped);
  }

  #overflow(): void {
    this.#overflowed = true;
    this.#values.clear();
  }

  /** Every string and number in `data`; iterative, as data may nest deeply. */
  #leaves(data: unknown): void {
    const stack: unknown[] = [data];
    while (stack.length > 0) {
      const next = stack.pop();
      if (this.#overflowed) return;
      if (typeof next === 'string' || typeof next === 'number') this.#add(String(next));
      else if (Array.isArray(next)) for (const item of next) stack.push(item);
      else if (next !== null && typeof next === 'object') for (const v of Object.values(next)) stack.push(v);
    }
  }
}
