import type { CursorPage, OffsetPage } from '../api.ts';

/** Previous / next for a page-numbered list (`page`, `size`). */
export function OffsetPager(props: { page: OffsetPage<unknown>['pagination'] | undefined; onPage: (n: number) => void }) {
  const p = props.page;
  if (!p || p.total_pages <= 1) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={p.page_number <= 1} onClick={() => props.onPage(p.page_number - 1)}>Previous</button>
      <span>Page {p.page_number} of {p.total_pages} ({p.total_items})</span>
      <button type="button" disabled={p.page_number >= p.total_pages} onClick={() => props.onPage(p.page_number + 1)}>Next</button>
    </nav>
  );
}

/** First / next for a cursor-paged list (`start` from the previous page's `pagination.next`). */
export function CursorPager(props: { page: CursorPage<unknown>['pagination'] | undefined; atStart: boolean; onFirst: () => void; onNext: (cursor: string) => void }) {
  const p = props.page;
  if (!p || (props.atStart && !p.next)) return null;
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" disabled={props.atStart} onClick={props.onFirst}>First page</button>
      <button type="button" disabled={!p.next} onClick={() => p.next && props.onNext(p.next)}>Next</button>
    </nav>
  );
}
