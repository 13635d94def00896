import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { Badge, EmptyState, PageHeader, When } from '../../components/bits.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';
import type { Application } from './types.ts';

export function ApplicationList() {
  const can = useCan();
  const [page, setPage] = useState(1);
  const { data, error, loading } = useLoad(() => api.get<OffsetPage<Application>>('applications', { page, size: 20 }), [page]);
  return (
    <section>
      <PageHeader title="Applications">
        {can('application:create') && <a class="button" href={href('applications', 'new')}>New application</a>}
      </PageHeader>
      <p class="muted">An application is a set of permissions; its keys are what your servers and apps send as <code>SVC-API-KEY</code>.</p>
      <ProblemBanner error={error} />
      <ListTable
        data={data}
        loading={loading}
        pager={<OffsetPager page={data?.pagination} onPage={setPage} />}
        head={['Name', 'Type', 'Permissions', 'Keys', 'Created']}
        empty={
          <EmptyState title="No applications yet">
            {can('application:create') ? <p><a href={href('applications', 'new')}>Create one</a>: a <em>private</em> application for your back end is the usual first.</p> : <p>An ADMIN or the OWNER can create one.</p>}
          </EmptyState>
        }
        row={(a) => (
          <>
            <td><a href={href('applications', a.id)}>{a.name}</a></td>
            <td><Badge>{a.type}</Badge></td>
            <td>{a.permissions.length}</td>
            <td>{a.keys.length}</td>
            <td><When at={a.created_at} /></td>
          </>
        )}
      />
    </section>
  );
}
