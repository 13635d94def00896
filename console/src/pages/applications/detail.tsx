import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, confirmed, Facts, Loading, PageHeader, When } from '../../components/bits.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { useCan } from '../../session.tsx';
import { ApplicationForm } from './form.tsx';
import type { Application, ApplicationKey } from './types.ts';

export function ApplicationDetail(props: { id: string }) {
  const can = useCan();
  const { data: app, error, reload } = useLoad(() => api.get<Application>(`applications/${encodeURIComponent(props.id)}`), [props.id]);
  const [editing, setEditing] = useState(false);
  const [newKey, setNewKey] = useState<string | undefined>();
  const save = useSubmit(async (d: { name: string; permissions: string[]; rules: unknown[] }) => {
    await api.put(`applications/${props.id}`, { name: d.name, permissions: d.permissions, rules: d.rules });
    setEditing(false);
    reload();
  });
  const action = useSubmit(async (fn: () => Promise<void>) => fn());
  if (error) return <ProblemBanner error={error} />;
  if (!app) return <Loading />;
  const createKey = () => action.submit(async () => {
    const k = await api.post<ApplicationKey>(`applications/${app.id}/keys`);
    setNewKey(k.key);
    reload();
  });
  const revoke = (k: ApplicationKey) => confirmed('Revoke this key? Whatever uses it stops working at once.') && action.submit(async () => {
    await api.del(`applications/${app.id}/keys/${k.id}`);
    reload();
  });
  const remove = () => confirmed(`Delete the application ${app.name} and all its keys?`) && action.submit(async () => {
    await api.del(`applications/${app.id}`);
    navigate(href('applications'));
  });
  return (
    <section>
      <PageHeader title={app.name} back={{ href: href('applications'), label: 'Applications' }}>
        {can('application:update') && !editing && <button type="button" onClick={() => setEditing(true)}>Edit</button>}
        {can('application:delete') && <button type="button" class="danger" onClick={remove}>Delete</button>}
      </PageHeader>
      <ProblemBanner error={action.error} />
      {editing ? (
        <ApplicationForm
          mode="edit"
          initial={{ name: app.name, type: app.type, permissions: app.permissions, rules: app.rules, create_key: false }}
          busy={save.busy}
          error={save.error}
          fieldErrors={save.fieldErrors}
          onSubmit={(d) => void save.submit(d)}
          onCancel={() => { save.clear(); setEditing(false); }}
        />
      ) : (
        <>
          <Facts rows={[
            ['ID', <code>{app.id}</code>],
            ['Type', <Badge>{app.type}</Badge>],
            ['Permissions', app.permissions.length ? <ul class="inline-list">{app.permissions.map((p) => <li key={p}><code>{p}</code></li>)}</ul> : <span class="muted">none</span>],
            ['Access rules', app.rules.length ? `${app.rules.length}` : <span class="muted">none</span>],
            ['Expires', <When at={app.expires_at} />],
            ['Created', <When at={app.created_at} />],
            ['Modified', <When at={app.modified_at} />],
          ]} />
          {app.rules.length > 0 && (
            <div class="table-wrap">
              <table>
                <thead><tr><th>Priority</th><th>Container</th><th>Conditions</th><th>Transform</th><th>Permissions</th></tr></thead>
                <tbody>
                  {app.rules.map((r, i) => (
                    <tr key={i}>
                      <td>{r.priority}</td>
                      <td><code>{r.container ?? '—'}</code></td>
                      <td>{(r.conditions ?? []).map((c) => `${c.attribute} ${c.operator} ${c.value}`).join('; ') || '—'}</td>
                      <td>{r.transform ?? 'redact'}</td>
                      <td>{r.permissions.join(', ')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
      <h2>Keys</h2>
      {newKey && <SecretOnce label="The new key" value={newKey} onDone={() => setNewKey(undefined)} />}
      {app.keys.length === 0 ? (
        <p class="muted">This application has no key: nothing can use it yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Key ID</th><th>Created</th><th><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {app.keys.map((k) => (
                <tr key={k.id}>
                  <td><code>{k.id}</code></td>
                  <td><When at={k.created_at} /></td>
                  <td>{can('application:delete') && <button type="button" class="link danger" onClick={() => revoke(k)}>Revoke</button>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {can('application:create') && <button type="button" onClick={createKey} disabled={action.busy}>Create a key</button>}
    </section>
  );
}
