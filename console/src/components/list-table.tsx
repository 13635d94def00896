import type { ComponentChildren } from 'preact';
import { Loading } from './bits.tsx';

/**
 * A list's body: "Loading…" until the first page comes, then `empty` (an EmptyState) or the
 * table — `head` its column titles, `row` the cells of one item — and `pager`, the list's own
 * (an OffsetPager or a CursorPager).
 */
export function ListTable<T extends { id: string }>(props: {
  data: { data: T[] } | undefined;
  loading: boolean;
  empty: ComponentChildren;
  head: string[];
  row: (item: T) => ComponentChildren;
  pager: ComponentChildren;
}) {
  const { data } = props;
  return (
    <>
      {props.loading && !data && <Loading />}
      {data && data.data.length === 0 && props.empty}
      {data && data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead><tr>{props.head.map((h) => <th key={h}>{h}</th>)}</tr></thead>
            <tbody>{data.data.map((item) => <tr key={item.id}>{props.row(item)}</tr>)}</tbody>
          </table>
        </div>
      )}
      {props.pager}
    </>
  );
}
