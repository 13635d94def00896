import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { Badge, EmptyState, PageHeader } from '../../components/bits.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';
import type { Webhook } from './types.ts';

export function WebhookList() {
  const can = useCan();
  const [page, setPage] = useState(1);
  const { data, error, loading } = useLoad(() => api.get<OffsetPage<Webhook>>('webhooks', { page, size: 20 }), [page]);
  return (
    <section>
      <PageHeader title="Webhooks">
        {can('webhook:create') && <a class="button" href={href('webhooks', 'new')}>New webhook</a>}
      </PageHeader>
      <ProblemBanner error={error} />
      <ListTable
        data={data}
        loading={loading}
        pager={<OffsetPager page={data?.pagination} onPage={setPage} />}
        head={['Name', 'URL', 'Events', 'Status']}
        empty={
          <EmptyState title="No webhooks yet">{can('webhook:create') && <p><a href={href('webhooks', 'new')}>Add an endpoint</a> to receive signed events: tokens created, transactions captured, members joining…</p>}</EmptyState>
        }
        row={(w) => (
          <>
            <td><a href={href('webhooks', w.id)}>{w.name}</a></td>
            <td><code>{w.url}</code></td>
            <td>{w.events.includes('*') ? 'all' : w.events.length}</td>
            <td><Badge tone={w.status === 'enabled' ? 'ok' : 'warn'}>{w.status}</Badge></td>
          </>
        )}
      />
    </section>
  );
}
