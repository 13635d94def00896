/**
 * What `proxy.minimal_token` adds to `proxy.minimal`, and `react.minimal_token` to
 * `react.minimal`: the least a program does to put one stored card's data where a call asks
 * for it, as `proxy.one_token` and `react.one_token` ask of Coffer. Each call finds the
 * `{{ <id> }}` (the whole card), `{{ <id> | json: '$.<field>' }}` and
 * `{{ <id> | card_exp: 'MM/YY' }}` strings in its JSON (a proxy's body, a reactor's args),
 * reads each token's ciphertext by its key, opens it (AES-256-GCM, bound to the token by its
 * additional data), puts the values in, and commits one audit row per token used, shaped as
 * Coffer's audit_events, before the data goes on. Under concurrency the least work per call is
 * shared work, as a database-backed service does it: the reads of the calls made in one turn
 * of the event loop are one SELECT (at most 4 at once), and the audit rows waiting are one
 * INSERT (one at a time, so those arriving meanwhile make the next). No auth, no rules, no
 * expression language beyond these forms: what the `one_token` rows cost beyond this is what
 * Coffer adds.
 */
import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { Coalescer } from '../src/db/coalescer.ts';

/** Coffer's default DATABASE_POOL_SIZE. */
const POOL_SIZE = 20;
export const TOKEN_TABLE = 'bench_minimal_tokens';
export const TOKEN_AUDIT_TABLE = 'bench_minimal_token_audit';
const EXPRESSION = /^\{\{\s*([A-Za-z0-9_-]+)\s*(?:\|\s*(json|card_exp)\s*:\s*'([^']*)'\s*)?\}\}$/;

export type TokenWork = {
  /** The body with its expressions replaced; throws an Error whose message says why not. */
  detokenize(body: Buffer): Promise<Buffer>;
  /** `value` (parsed JSON) with its expressions replaced in place; throws as detokenize does. */
  detokenizeValue<T>(value: T): Promise<T>;
  close(): Promise<void>;
};

type Card = { number: string; expiration_month: number; expiration_year: number; cvc: string };
type Found = { holder: Record<string, unknown> | unknown[]; key: string | number; id: string; filter: string | undefined; arg: string | undefined };

/** Stores `card` under each of `ids` in a table of its own, sealed with a key of its own. */
export async function createTokenWork(opts: { db: pg.PoolConfig; ids: string[]; card: Card }): Promise<TokenWork> {
  const pool = new pg.Pool({ ...opts.db, max: POOL_SIZE });
  pool.on('error', () => {}); // an idle client dropped when the database stops is not a finding
  const tenant = randomUUID();
  // A KeyObject, as Coffer holds its keys: given raw bytes, Node 24 spends ~12 µs more on each cipher finding
  // out that they are neither a KeyObject nor a CryptoKey (14 against 1.6 µs a createDecipheriv, measured).
  const key = createSecretKey(randomBytes(32));
  const aad = (id: string) => Buffer.from(`${tenant}/${id}`);
  await pool.query(`CREATE TABLE IF NOT EXISTS ${TOKEN_TABLE} (tenant_id uuid NOT NULL, id text NOT NULL, ciphertext bytea NOT NULL, PRIMARY KEY (tenant_id, id))`);
  // Coffer's audit table, indexes included (not its foreign key: there is no tenant here).
  await pool.query(`CREATE TABLE IF NOT EXISTS ${TOKEN_AUDIT_TABLE} (LIKE audit_events INCLUDING DEFAULTS INCLUDING INDEXES)`);
  for (const id of opts.ids) {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, nonce).setAAD(aad(id));
    const sealed = Buffer.concat([nonce, cipher.update(JSON.stringify(opts.card)), cipher.final(), cipher.getAuthTag()]);
    await pool.query(`INSERT INTO ${TOKEN_TABLE} (tenant_id, id, ciphertext) VALUES ($1, $2, $3)`, [tenant, id, sealed]);
  }

  const open = (id: string, sealed: Buffer): Card => {
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12)).setAAD(aad(id));
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(12, sealed.length - 16)), decipher.final()]).toString('utf8'));
  };

  // Coffer's coalescer (src/db/coalescer.ts) shares the statements, so the two programs batch alike.
  const reads = new Coalescer<string, Buffer | undefined>(async (ids) => {
    const { rows } = await pool.query({ name: 'tokens', text: `SELECT id, ciphertext FROM ${TOKEN_TABLE} WHERE tenant_id = $1 AND id = ANY($2::text[])`, values: [tenant, [...new Set(ids)]] });
    const byId = new Map<string, Buffer>(rows.map((r) => [r.id, r.ciphertext]));
    return ids.map((id) => byId.get(id));
  }, { maxBatch: 256, maxInFlight: 4, isolateFailures: false });
  const use = async (id: string): Promise<Card> => {
    const sealed = await reads.submit(id);
    if (!sealed) throw new Error(`token ${id} not found`);
    return open(id, sealed);
  };

  const audits = new Coalescer<string, undefined>(async (ids) => {
    await pool.query({
      name: 'audit',
      text: `INSERT INTO ${TOKEN_AUDIT_TABLE} (id, tenant_id, entity_type, entity_id, operation, message)
        SELECT u.id, $2, 'token', u.entity_id, 'use', 'Token detokenized (reveal)' FROM unnest($1::uuid[], $3::text[]) AS u (id, entity_id)`,
      values: [ids.map(() => randomUUID()), tenant, ids],
    });
    return ids.map(() => undefined);
  }, { maxBatch: 256, maxInFlight: 1, isolateFailures: false });

  /** Replaces the expressions under `parsed` in place; false when it has none. */
  const replace = async (parsed: unknown): Promise<boolean> => {
    const found: Found[] = [];
    collect(parsed, found);
    if (found.length === 0) return false;
    const ids = [...new Set(found.map((f) => f.id))];
    const cards = new Map(await Promise.all(ids.map(async (id) => [id, await use(id)] as const)));
    for (const f of found) (f.holder as Record<string | number, unknown>)[f.key] = render(cards.get(f.id)!, f.filter, f.arg);
    await Promise.all(ids.map((id) => audits.submit(id)));
    return true;
  };

  return {
    async detokenize(body) {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      return (await replace(parsed)) ? Buffer.from(JSON.stringify(parsed)) : body;
    },
    async detokenizeValue(value) {
      await replace(value);
      return value;
    },
    close: () => pool.end(),
  };
}

/** The expression strings under `node`, with where each sits. */
function collect(node: unknown, found: Found[]): void {
  if (node === null || typeof node !== 'object') return;
  const entries: [string | number, unknown][] = Array.isArray(node) ? node.map((v, i) => [i, v]) : Object.entries(node);
  for (const [key, value] of entries) {
    const m = typeof value === 'string' ? EXPRESSION.exec(value) : null;
    if (m) found.push({ holder: node as Found['holder'], key, id: m[1], filter: m[2], arg: m[3] });
    else collect(value, found);
  }
}

/** No filter: the whole card; `json: '$.<field>'` takes a top-level field; `card_exp: 'MM/YY'` formats the expiration. */
function render(card: Card, filter: string | undefined, arg = ''): unknown {
  if (filter === undefined) return card;
  if (filter === 'json') {
    if (!arg.startsWith('$.')) throw new Error(`unsupported path ${arg}`);
    return (card as Record<string, unknown>)[arg.slice(2)];
  }
  if (arg !== 'MM/YY') throw new Error(`unsupported format ${arg}`);
  return `${String(card.expiration_month).padStart(2, '0')}/${String(card.expiration_year % 100).padStart(2, '0')}`;
}
