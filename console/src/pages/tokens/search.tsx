import { useState } from 'preact/hooks';
import { api, type CursorPage } from '../../api.ts';
import { Badge, EmptyState, PageHeader, When } from '../../components/bits.tsx';
import { FormField } from '../../components/form-field.tsx';
import { CursorPager } from '../../components/pager.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { fieldErrorsOf, ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';
import type { Token } from './types.ts';

/**
 * The vault: with a query, POST /v2/tokens/search (`type:card AND container:/pci/high/`);
 * without one, GET /v2/tokens, newest pages by cursor. Data shows as the member may see it: masked.
 */
export function TokenSearch(props: { initialQuery: string }) {
  const can = useCan();
  const [text, setText] = useState(props.initialQuery);
  const [query, setQuery] = useState(props.initialQuery);
  const [cursors, setCursors] = useState<string[]>([]);
  const start = cursors.at(-1);
  const { data, error, loading } = useLoad(
    () => (query.trim()
      ? api.post<CursorPage<Token>>('v2/tokens/search', { query: query.trim(), start: start ?? null, size: 20 })
      : api.get<CursorPage<Token>>('v2/tokens', { start, size: 20 })),
    [query, start],
  );
  const errors = fieldErrorsOf(error);
  return (
    <section>
      <PageHeader title="Tokens">
        {can('token:create') && <a class="button" href={href('tokens', 'new')}>New token</a>}
      </PageHeader>
      <form class="filters" role="search" onSubmit={(e) => { e.preventDefault(); setCursors([]); setQuery(text); }}>
        <FormField label="Search" path="body.query" errors={errors} id="token-query" hint={<>Terms like <code>type:card</code>, <code>container:/pci/high/</code>, <code>metadata.order:o-1</code>, joined by <code>AND</code> / <code>OR</code>. Empty lists every token.</>}>
          <input id="token-query" type="search" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </FormField>
        <button type="submit">Search</button>
      </form>
      {!errors['body.query'] && <ProblemBanner error={error} />}
      <ListTable
        data={data}
        loading={loading}
        head={['ID', 'Type', 'Data (masked)', 'Containers', 'Created']}
        empty={
          <EmptyState title={query ? 'No token matches' : 'The vault is empty'}>
            {query ? <p>Try fewer terms.</p> : can('token:create') ? <p><a href={href('tokens', 'new')}>Create a token</a>, or let your application tokenize data with its key.</p> : <p>Tokens appear here once your applications create them.</p>}
          </EmptyState>
        }
        row={(t) => (
          <>
            <td><a href={href('tokens', t.id)}><code>{t.id}</code></a></td>
            <td><Badge>{t.type}</Badge></td>
            <td class="masked">{t.data === undefined ? <span class="muted">hidden</span> : typeof t.data === 'string' ? t.data : JSON.stringify(t.data)}</td>
            <td>{t.containers.join(', ')}</td>
            <td><When at={t.created_at} /></td>
          </>
        )}
        pager={<CursorPager page={data?.pagination} atStart={cursors.length === 0} onFirst={() => setCursors([])} onNext={(c) => setCursors([...cursors, c])} />}
      />
    </section>
  );
}
