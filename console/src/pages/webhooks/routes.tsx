import { useState } from 'preact/hooks';
import { api, errorsUnder, type FieldErrors, type OffsetPage } from '../../api.ts';
import { Badge, confirmed, EmptyState, Facts, Loading, PageHeader, When } from '../../components/bits.tsx';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { OffsetPager } from '../../components/pager.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { useCan } from '../../session.tsx';

type Webhook = { id: string; name: string; url: string; notify_email?: string; events: string[]; status: 'enabled' | 'disabled'; secret?: string; created_at: string; modified_at?: string };
type Delivery = { id: string; event_id: string; event_type: string; attempt: number; status: 'succeeded' | 'failed'; response_status?: number; error?: string; duration_ms: number; created_at: string };
type Draft = { name: string; url: string; notify_email: string | null; events: string[]; status: 'enabled' | 'disabled' };

export function WebhooksRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  if (!id) return <WebhookList />;
  if (id === 'new') return <WebhookCreate />;
  return <WebhookDetail id={id} />;
}

function WebhookList() {
  const can = useCan();
  const [page, setPage] = useState(1);
  const { data, error, loading } = useLoad(() => api.get<OffsetPage<Webhook>>('webhooks', { page, size: 20 }), [page]);
  return (
    <section>
      <PageHeader title="Webhooks">
        {can('webhook:create') && <a class="button" href={href('webhooks', 'new')}>New webhook</a>}
      </PageHeader>
      <ProblemBanner error={error} />
      {loading && !data && <Loading />}
      {data && data.data.length === 0 && (
        <EmptyState title="No webhooks yet">{can('webhook:create') && <p><a href={href('webhooks', 'new')}>Add an endpoint</a> to receive signed events: tokens created, transactions captured, members joining…</p>}</EmptyState>
      )}
      {data && data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>URL</th><th>Events</th><th>Status</th></tr></thead>
            <tbody>
              {data.data.map((w) => (
                <tr key={w.id}>
                  <td><a href={href('webhooks', w.id)}>{w.name}</a></td>
                  <td><code>{w.url}</code></td>
                  <td>{w.events.includes('*') ? 'all' : w.events.length}</td>
                  <td><Badge tone={w.status === 'enabled' ? 'ok' : 'warn'}>{w.status}</Badge></td>
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

function WebhookForm(props: { initial?: Webhook; submitLabel: string; busy: boolean; error: unknown; fieldErrors: FieldErrors; onSubmit: (d: Draft) => void }) {
  const types = useLoad(() => api.get<string[]>('webhooks/event-types'), []);
  const [d, setD] = useState<Draft>({
    name: props.initial?.name ?? '', url: props.initial?.url ?? '', notify_email: props.initial?.notify_email ?? null,
    events: props.initial?.events ?? ['*'], status: props.initial?.status ?? 'enabled',
  });
  const errors = props.fieldErrors;
  const toggle = (t: string, on: boolean) => setD({ ...d, events: on ? [...d.events.filter((x) => t === '*' ? false : x !== '*'), t] : d.events.filter((x) => x !== t) });
  const shown = ['body.name', 'body.url', 'body.notify_email', 'body.events', 'body.status'];
  return (
    <form class="form" noValidate onSubmit={(e) => { e.preventDefault(); props.onSubmit(d); }}>
      <ProblemBanner error={props.error} />
      <div class="grid-2">
        <FormField label="Name" path="body.name" errors={errors} id="wh-name">
          <input id="wh-name" value={d.name} onInput={(e) => setD({ ...d, name: e.currentTarget.value })} />
        </FormField>
        <FormField label="URL" path="body.url" errors={errors} id="wh-url">
          <input id="wh-url" type="url" value={d.url} onInput={(e) => setD({ ...d, url: e.currentTarget.value })} placeholder="https://example.com/coffer-events" />
        </FormField>
        <FormField label="Notify e-mail (optional)" path="body.notify_email" errors={errors} id="wh-email" hint="Told when deliveries keep failing">
          <input id="wh-email" type="email" value={d.notify_email ?? ''} onInput={(e) => setD({ ...d, notify_email: e.currentTarget.value || null })} />
        </FormField>
        <FormField label="Status" path="body.status" errors={errors} id="wh-status">
          <select id="wh-status" value={d.status} onChange={(e) => setD({ ...d, status: e.currentTarget.value as Draft['status'] })}>
            <option value="enabled">enabled</option>
            <option value="disabled">disabled</option>
          </select>
        </FormField>
      </div>
      <fieldset class={errorsUnder(errors, 'body.events').length ? 'field-invalid' : ''}>
        <legend>Events</legend>
        <div class="checks">
          {['*', ...(types.data ?? [])].filter((t, i, a) => a.indexOf(t) === i).map((t) => (
            <div class="check" key={t}>
              <input type="checkbox" id={`wh-ev-${t}`} checked={d.events.includes(t)} onChange={(e) => toggle(t, e.currentTarget.checked)} />
              <label for={`wh-ev-${t}`}>{t === '*' ? 'Every event, present and future (*)' : <code>{t}</code>}</label>
            </div>
          ))}
        </div>
        {errorsUnder(errors, 'body.events').map((m) => <p class="field-errors" role="alert" key={m}>{m}</p>)}
      </fieldset>
      <FieldMessages errors={errors} except={shown} />
      <div class="row"><button type="submit" disabled={props.busy}>{props.busy ? 'Saving…' : props.submitLabel}</button></div>
    </form>
  );
}

function WebhookCreate() {
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

function WebhookDetail(props: { id: string }) {
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
