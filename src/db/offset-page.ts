/**
 * Offset lists (GET /tokens, /applications, …) answer a page and the number of items, and
 * the two must describe the same data: counted and paged by two statements, a row inserted
 * or deleted between them gives a page of 11 rows claiming 10 items, or an empty last page.
 *
 * Each store therefore asks for both in one statement, which PostgreSQL runs on one snapshot:
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
export type WithTotal<T> = { [K in keyof T]: T[K] | null } & { total_items: number };

/** The rows of a page and its total, from the answer of a statement shaped as above. */
export function pageAndTotal<T extends { id: unknown }>(answer: WithTotal<T>[]): { rows: T[]; total: number } {
  const rows: T[] = [];
  for (const { total_items: _, ...row } of answer) {
    // Every listed table's id is NOT NULL: a null one is the placeholder of an empty page.
    if (row.id !== null) rows.push(row as unknown as T);
  }
  return { rows, total: answer[0]?.total_items ?? 0 };
}
