import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../../api.ts';
import { Badge, confirmed, Facts, Loading, PageHeader, When } from '../../components/bits.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { useCan } from '../../session.tsx';
import { WebhookForm } from './form.tsx';
import type { Delivery, Draft, Webhook } from './types.ts';

/** Create: the signing secret is in this answer only, shown once. */
export function WebhookCreate() {
  const [created, setCreated] = useState<Webhook | undefined>();
  const { submit, busy, error, fieldErrors } = useSubmit(async (d: Draft) => setCreated(await api.post<Webhook>('webhooks', d)));
  if (created) {
    return (
      <section>
        <PageHeader title={`Created ${created.name}`} back={{ href: href('webhooks'), label: 'Webhooks' }} />
        {created.secret && <SecretOnce label="The signing secret" value={created.secret} />}
        <p><a class="button" href={href('webhooks', created.id)}>Open the webhook</a></p>
      </section>
    );
  }
  return (
    <section>
      <PageHeader title="New webhook" back={{ href: href('webhooks'), label: 'Webhooks' }} />
      <WebhookForm submitLabel="Create webhook" busy={busy} error={error} fieldErrors={fieldErrors} onSubmit={(d) => void submit(d)} />
    </section>
  );
}

/** A webhook, its edit form, and its recent deliveries (GET /webhooks/{id}/deliveries, newest first). */
export function WebhookDetail(props: { id: string }) {
  const can = useCan();
  const path = `webhooks/${encodeURIComponent(props.id)}`;
  const { data: hook, error, reload } = useLoad(() => api.get<Webhook>(path), [props.id]);
  const [page, setPage] = useState(1);
  const deliveries = useLoad(() => api.get<OffsetPage<Delivery>>(`${path}/deliveries`, { page, size: 20 }), [props.id, page]);
  const [editing, setEditing] = useState(false);
  const save = useSubmit(async (d: Draft) => {
    await api.put(path, d);
    setEditing(false);
    reload();
  });
  const remove = useSubmit(async () => {
    await api.del(path);
    navigate(href('webhooks'));
  });
  if (error) return <ProblemBanner error={error} />;
  if (!hook) return <Loading />;
  return (
    <section>
      <PageHeader title={hook.name} back={{ href: href('webhooks'), label: 'Webhooks' }}>
        {can('webhook:update') && !editing && <button type="button" onClick={() => setEditing(true)}>Edit</button>}
        {can('webhook:delete') && <button type="button" class="danger" onClick={() => confirmed(`Delete the webhook ${hook.name}?`) && void remove.submit()}>Delete</button>}
      </PageHeader>
      <ProblemBanner error={remove.error} />
      {editing ? (
        <WebhookForm initial={hook} submitLabel="Save" busy={save.busy} error={save.error} fieldErrors={save.fieldErrors} onSubmit={(d) => void save.submit(d)} />
      ) : (
        <Facts rows={[
          ['URL', <code>{hook.url}</code>],
          ['Status', <Badge tone={hook.status === 'enabled' ? 'ok' : 'warn'}>{hook.status}</Badge>],
          ['Events', <ul class="inline-list">{hook.events.map((e) => <li key={e}><code>{e}</code></li>)}</ul>],
          ['Notify e-mail', hook.notify_email],
          ['Created', <When at={hook.created_at} />],
        ]} />
      )}
      <h2>Recent deliveries</h2>
      <ProblemBanner error={deliveries.error} />
      {deliveries.data && deliveries.data.data.length === 0 && <p class="muted">Nothing delivered yet: deliveries show here once an event it subscribes to happens.</p>}
      {deliveries.data && deliveries.data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead><tr><th>When</th><th>Event</th><th>Attempt</th><th>Status</th><th>Answer</th><th>Time</th></tr></thead>
            <tbody>
              {deliveries.data.data.map((x) => (
                <tr key={x.id}>
                  <td><When at={x.created_at} /></td>
                  <td><code>{x.event_type}</code></td>
                  <td>{x.attempt}</td>
                  <td><Badge tone={x.status === 'succeeded' ? 'ok' : 'bad'}>{x.status}</Badge></td>
                  <td>{x.response_status ?? x.error ?? '—'}</td>
                  <td>{x.duration_ms} ms</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <OffsetPager page={deliveries.data?.pagination} onPage={setPage} />
    </section>
  );
}
