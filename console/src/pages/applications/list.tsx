import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { Badge, EmptyState, Loading, PageHeader, When } from '../../components/bits.tsx';
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
      {loading && !data && <Loading />}
      {data && data.data.length === 0 && (
        <EmptyState title="No applications yet">
          {can('application:create') ? <p><a href={href('applications', 'new')}>Create one</a>: a <em>private</em> application for your back end is the usual first.</p> : <p>An ADMIN or the OWNER can create one.</p>}
        </EmptyState>
      )}
      {data && data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>Type</th><th>Permissions</th><th>Keys</th><th>Created</th></tr></thead>
            <tbody>
              {data.data.map((a) => (
                <tr key={a.id}>
                  <td><a href={href('applications', a.id)}>{a.name}</a></td>
                  <td><Badge>{a.type}</Badge></td>
                  <td>{a.permissions.length}</td>
                  <td>{a.keys.length}</td>
                  <td><When at={a.created_at} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <OffsetPager page={data?.pagination} onPage={setPage} />
    </section>
  );
}
