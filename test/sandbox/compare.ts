/**
 * Table-driven comparison of the isolate's web APIs with Node's own globals: each case is the
 * body of an async function, run once inside the sandbox and once in this Node process, and
 * what it returns (or throws) is described the same way on both sides and compared.
 *
 * Thrown errors are compared by name, constructor and DOMException code, not by message:
 * the standards fix those, not the wording.
 */
import assert from 'node:assert/strict';
import type { Sandbox } from '../../src/sandbox/index.ts';
import { runner, value } from './helpers.ts';

/**
 * Plain JavaScript, evaluated on both sides: describes any value as JSON, keeping what a
 * JSON copy would lose (types, bytes, cycles, holes, -0, NaN, prototypes).
 */
const DESCRIBE_SOURCE = String.raw`
const describeValue = (root) => {
  const seen = new Map();
  const tag = (v) => Object.prototype.toString.call(v).slice(8, -1);
  const protoName = (v) => {
    const p = Object.getPrototypeOf(v);
    if (p === null) return 'null';
    const c = Object.getOwnPropertyDescriptor(p, 'constructor');
    return c && typeof c.value === 'function' ? c.value.name : '?';
  };
  const d = (v) => {
    if (v === undefined) return { undefined: true };
    if (typeof v === 'number') return Number.isFinite(v) && !Object.is(v, -0) ? v : { number: Object.is(v, -0) ? '-0' : String(v) };
    if (typeof v === 'bigint') return { bigint: String(v) };
    if (typeof v === 'symbol') return { symbol: v.description };
    if (typeof v === 'function') return { function: v.name };
    if (v === null || typeof v !== 'object') return v;
    if (seen.has(v)) return { ref: seen.get(v) };
    seen.set(v, seen.size);
    const proto = protoName(v);
    if (v instanceof ArrayBuffer) return { ArrayBuffer: Array.from(new Uint8Array(v)), proto };
    if (ArrayBuffer.isView(v)) {
      return { view: tag(v) === 'Object' ? 'DataView' : tag(v), proto, bytes: Array.from(new Uint8Array(v.buffer, v.byteOffset, v.byteLength)),
               byteOffset: v.byteOffset, bufferLength: v.buffer.byteLength, buffer: d(v.buffer) };
    }
    if (v instanceof Date) return { Date: d(v.getTime()), proto };
    if (v instanceof RegExp) return { RegExp: v.source, flags: v.flags, lastIndex: v.lastIndex, proto };
    if (v instanceof Map) return { Map: Array.from(v, ([k, x]) => [d(k), d(x)]), proto };
    if (v instanceof Set) return { Set: Array.from(v, d), proto };
    if (v instanceof Error) {
      return { error: v.name, proto, message: v.message, domException: typeof DOMException === 'function' && v instanceof DOMException, code: v.code,
               cause: Object.hasOwn(v, 'cause') ? d(v.cause) : { none: true }, own: Object.keys(v).sort() };
    }
    if (tag(v) === 'CryptoKey') return { CryptoKey: d({ type: v.type, extractable: v.extractable, algorithm: v.algorithm, usages: v.usages }) };
    if (Array.isArray(v)) {
      const items = [];
      for (let i = 0; i < v.length; i++) items.push(i in v ? d(v[i]) : { hole: true });
      return { array: items, proto, extra: Object.keys(v).filter((k) => !/^\d+$/.test(k)) };
    }
    const own = {};
    for (const k of Object.keys(v)) own[k] = d(v[k]);
    return { object: tag(v), proto, own };
  };
  return d(root);
};
const describeThrown = (e) => {
  if (e === null || typeof e !== 'object') return { thrown: describeValue(e) };
  const domException = typeof DOMException === 'function' && e instanceof DOMException;
  // Node's own codes (ERR_INVALID_ARG_TYPE, …) on its TypeErrors are not part of any standard.
  return { thrown: e.name, constructor: e.constructor && e.constructor.name, domException, code: domException ? e.code : undefined };
};
const outcomeOf = async (body, input) => {
  const AsyncFunction = (async () => {}).constructor;
  try {
    return { returned: describeValue(await new AsyncFunction('input', body)(input)) };
  } catch (e) {
    return describeThrown(e);
  }
};
`;

export type Case = { name: string; body: string; input?: unknown };

/** One case per row: `[name, body]` or `[name, body, input]`. */
export function cases(rows: ([string, string] | [string, string, unknown])[]): Case[] {
  return rows.map(([name, body, input]) => ({ name, body, input }));
}

async function inNode(c: Case): Promise<unknown> {
  const outcomeOf = new Function(`${DESCRIBE_SOURCE}; return outcomeOf;`)() as (body: string, input: unknown) => Promise<unknown>;
  return JSON.parse(JSON.stringify(await outcomeOf(c.body, c.input ?? null)));
}

/** What each case returns or throws inside the sandbox, all in one run (each in its own async function). */
export async function outcomesInSandbox(sb: Sandbox, list: Case[]): Promise<unknown[]> {
  const run = runner(sb);
  const code = `module.exports = async ({ args }) => { ${DESCRIBE_SOURCE}; const out = []; for (const c of args.cases) out.push(await outcomeOf(c.body, c.input)); return out; };`;
  return value(await run(code, { req: { args: { cases: list.map((c) => ({ body: c.body, input: c.input ?? null })) }, configuration: {} }, limits: { timeoutMs: 10_000 } })) as unknown[];
}

/** The outcome of a DOMException of this name being thrown, as outcomesInSandbox describes it. */
export function threwDOMException(name: string, code: number): unknown {
  return { thrown: name, constructor: 'DOMException', domException: true, code };
}

/** Runs every case in the sandbox and in Node, and fails listing each case whose outcomes differ. */
export async function compareWithNode(sb: Sandbox, list: Case[]): Promise<void> {
  const inside = await outcomesInSandbox(sb, list);
  const wrong: { name: string; sandbox: unknown; node: unknown }[] = [];
  for (let i = 0; i < list.length; i++) {
    const node = await inNode(list[i]);
    try {
      assert.deepEqual(inside[i], node);
    } catch {
      wrong.push({ name: list[i].name, sandbox: inside[i], node });
    }
  }
  const report = wrong.map((w) => `${w.name}\n  sandbox: ${JSON.stringify(w.sandbox)}\n  node:    ${JSON.stringify(w.node)}`).join('\n');
  assert.ok(wrong.length === 0, `${wrong.length} of ${list.length} cases differ from Node:\n${report}`);
}
