import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { Badge, EmptyState, PageHeader, When } from '../../components/bits.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';
import type { Proxy } from './types.ts';

export function ProxyList() {
  const can = useCan();
  const [page, setPage] = useState(1);
  const { data, error, loading } = useLoad(() => api.get<OffsetPage<Proxy>>('proxies', { page, size: 20 }), [page]);
  return (
    <section>
      <PageHeader title="Proxies">
        {can('proxy:create') && <a class="button" href={href('proxies', 'new')}>New proxy</a>}
      </PageHeader>
      <p class="muted">A proxy forwards requests sent to Coffer's <code>/proxy</code> to a destination, detokenizing <code>{'{{ token_id }}'}</code> expressions on the way.</p>
      <ProblemBanner error={error} />
      <ListTable
        data={data}
        loading={loading}
        pager={<OffsetPager page={data?.pagination} onPage={setPage} />}
        head={['Name', 'Destination', 'Auth', 'Modified']}
        empty={
          <EmptyState title="No proxies yet">
            {can('proxy:create') && <p><a href={href('proxies', 'new')}>Create a proxy</a> to your processor's URL, then try a request through it.</p>}
          </EmptyState>
        }
        row={(p) => (
          <>
            <td><a href={href('proxies', p.id)}>{p.name}</a></td>
            <td><code>{p.destination_url}</code></td>
            <td>{p.require_auth ? <Badge>token:use needed</Badge> : <Badge tone="warn">anonymous</Badge>}</td>
            <td><When at={p.modified_at ?? p.created_at} /></td>
          </>
        )}
      />
    </section>
  );
}
