import type { ComponentChildren } from 'preact';
import type { OffsetPage } from '../api.ts';
import { Loading } from './bits.tsx';
import { OffsetPager } from './pager.tsx';

/**
 * A page-numbered list's body: "Loading…" until the first page comes, then `empty` (an
 * EmptyState) or the table — `head` its column titles, `row` the cells of one item — and the pager.
 */
export function ListTable<T extends { id: string }>(props: {
  data: OffsetPage<T> | undefined;
  loading: boolean;
  empty: ComponentChildren;
  head: string[];
  row: (item: T) => ComponentChildren;
  onPage: (page: number) => void;
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
      <OffsetPager page={data?.pagination} onPage={props.onPage} />
    </>
  );
}
