import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { EmptyState, PageHeader, When } from '../../components/bits.tsx';
import { FormField } from '../../components/form-field.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { fieldErrorsOf, ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';
import type { Reactor } from './types.ts';

export function ReactorList() {
  const can = useCan();
  const [page, setPage] = useState(1);
  const [text, setText] = useState('');
  const [name, setName] = useState('');
  const { data, error, loading } = useLoad(() => api.get<OffsetPage<Reactor>>('reactors', { page, size: 20, name }), [page, name]);
  const errors = fieldErrorsOf(error);
  return (
    <section>
      <PageHeader title="Reactors">
        {can('reactor:create') && <a class="button" href={href('reactors', 'new')}>New reactor</a>}
      </PageHeader>
      <p class="muted">A reactor is your JavaScript, run in Coffer's sandbox next to the data: it receives detokenized arguments and can call out.</p>
      <form class="filters" role="search" onSubmit={(e) => { e.preventDefault(); setPage(1); setName(text); }}>
        <FormField label="Name" path="query.name" errors={errors} id="reactor-name-filter" hint="* matches anything">
          <input id="reactor-name-filter" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </FormField>
        <button type="submit">Filter</button>
      </form>
      {!errors['query.name'] && <ProblemBanner error={error} />}
      <ListTable
        data={data}
        loading={loading}
        pager={<OffsetPager page={data?.pagination} onPage={setPage} />}
        head={['Name', 'Application', 'Modified']}
        empty={
          <EmptyState title={name ? 'No reactor has that name' : 'No reactors yet'}>
            {can('reactor:create') && !name && <p><a href={href('reactors', 'new')}>Write your first reactor</a>: it starts from a working example you can run at once.</p>}
          </EmptyState>
        }
        row={(r) => (
          <>
            <td><a href={href('reactors', r.id)}>{r.name}</a></td>
            <td>{r.application?.name ?? <span class="muted">none</span>}</td>
            <td><When at={r.modified_at ?? r.created_at} /></td>
          </>
        )}
      />
    </section>
  );
}
