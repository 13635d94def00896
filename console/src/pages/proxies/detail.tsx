import { api } from '../../api.ts';
import { Badge, confirmed, CopyButton, Facts, Loading, PageHeader, When } from '../../components/bits.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { useCan } from '../../session.tsx';
import { ProxyForm, type ProxyDraft } from './form.tsx';
import { TryPanel } from './try-panel.tsx';
import type { Proxy } from './types.ts';

export function ProxyCreate() {
  const { submit, busy, error, fieldErrors } = useSubmit(async (d: ProxyDraft) => {
    const p = await api.post<Proxy>('proxies', d);
    navigate(href('proxies', p.id));
  });
  return (
    <section>
      <PageHeader title="New proxy" back={{ href: href('proxies'), label: 'Proxies' }} />
      <ProxyForm submitLabel="Create proxy" busy={busy} error={error} fieldErrors={fieldErrors} onSubmit={(d) => void submit(d)} />
    </section>
  );
}

export function ProxyDetail(props: { id: string }) {
  const can = useCan();
  const { data: proxy, error, reload } = useLoad(() => api.get<Proxy>(`proxies/${encodeURIComponent(props.id)}`), [props.id]);
  const save = useSubmit(async (d: ProxyDraft) => {
    await api.put(`proxies/${props.id}`, d);
    reload();
  });
  const remove = useSubmit(async () => {
    await api.del(`proxies/${props.id}`);
    navigate(href('proxies'));
  });
  if (error) return <ProblemBanner error={error} />;
  if (!proxy) return <Loading />;
  return (
    <section>
      <PageHeader title={proxy.name} back={{ href: href('proxies'), label: 'Proxies' }}>
        {can('proxy:delete') && <button type="button" class="danger" onClick={() => confirmed(`Delete the proxy ${proxy.name}? Its key stops working.`) && void remove.submit()}>Delete</button>}
      </PageHeader>
      <ProblemBanner error={remove.error} />
      <Facts rows={[
        ['ID', <code>{proxy.id}</code>],
        ['Proxy key', <span class="secret-row"><code class="secret">{proxy.key}</code><CopyButton value={proxy.key} /></span>],
        ['Destination', <code>{proxy.destination_url}</code>],
        ['Callers', proxy.require_auth ? <Badge>need token:use (a key or a session)</Badge> : <Badge tone="warn">anonymous: the proxy key is enough</Badge>],
        ['Modified', <When at={proxy.modified_at ?? proxy.created_at} />],
      ]} />
      <div class="split">
        <ProxyForm key={proxy.modified_at ?? proxy.created_at} initial={proxy} submitLabel="Save" readOnly={!can('proxy:update')} busy={save.busy} error={save.error} fieldErrors={save.fieldErrors} onSubmit={(d) => void save.submit(d)} />
        {can('token:use') ? <TryPanel proxyKey={proxy.key} /> : <p class="muted">Trying a proxy needs the token:use permission, which your role does not hold.</p>}
      </div>
    </section>
  );
}
