import type { Database } from './database.ts';

/**
 * Offset lists (GET /tokens, /applications, …) answer a page and the number of items, and
 * the two must describe the same data: counted and paged by two statements, a row inserted
 * or deleted between them gives a page of 11 rows claiming 10 items, or an empty last page.
 *
 * So every store asks for both through offsetPage, one statement, which PostgreSQL runs on one snapshot:
 *
 *   SELECT p.*, c.total_items
 *   FROM (SELECT count(*) AS total_items FROM t WHERE …) c
 *   LEFT JOIN LATERAL (SELECT … FROM t WHERE … ORDER BY … LIMIT … OFFSET …) p ON true
 *   ORDER BY p.…
 *
 * One round trip on one connection. Both halves keep the plans they had as separate
 * statements (the count can be an index-only scan, the page stops after offset + limit rows
 * of its index) and the outer sort orders at most a page. The alternatives cost more per
 * request: a READ ONLY REPEATABLE READ transaction is BEGIN, two statements and COMMIT, four
 * round trips in sequence holding a pool connection throughout (the separate statements ran
 * in parallel); `count(*) OVER ()` makes the window read and buffer every matching row, all
 * its columns (a tenant's every ciphertext for tokens), before the first row of the page
 * comes out, and needs a second statement, on another snapshot, for a page past the end.
 * Here a page past the end is a single row of nulls that still carries the count.
 */
type WithTotal<T> = { [K in keyof T]: T[K] | null } & { total_items: number };

export type OffsetQuery = {
  /** The table, and the columns a row of the page has. */
  table: string;
  columns: string;
  /** The condition, on `params` ($1 …); the page's limit and offset come after them. */
  where: string;
  params: unknown[];
  /** ORDER BY terms of plain columns, such as ['created_at', 'id'] or ['id DESC']. */
  orderBy: string[];
  limit: number;
  offset: number;
};

/** A page of `q.table` and the number of its rows matching `q.where`, in the one statement above. */
export async function offsetPage<T extends { id: unknown }>(db: Database, q: OffsetQuery): Promise<{ rows: T[]; total: number }> {
  const n = q.params.length;
  const answer = await db.query<WithTotal<T>>(
    `SELECT p.*, c.total_items FROM (SELECT count(*) AS total_items FROM ${q.table} WHERE ${q.where}) c
     LEFT JOIN LATERAL (
       SELECT ${q.columns} FROM ${q.table} WHERE ${q.where} ORDER BY ${q.orderBy.join(', ')} LIMIT $${n + 1} OFFSET $${n + 2}
     ) p ON true
     ORDER BY ${q.orderBy.map((term) => `p.${term}`).join(', ')}`,
    [...q.params, q.limit, q.offset],
  );
  return pageAndTotal(answer);
}

/** The rows of a page and its total, from the answer of a statement shaped as above. */
function pageAndTotal<T extends { id: unknown }>(answer: WithTotal<T>[]): { rows: T[]; total: number } {
  const rows: T[] = [];
  for (const { total_items: _, ...row } of answer) {
    // Every listed table's id is NOT NULL: a null one is the placeholder of an empty page.
    if (row.id !== null) rows.push(row as unknown as T);
  }
  return { rows, total: answer[0]?.total_items ?? 0 };
}
