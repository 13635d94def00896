import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { confirmed, Loading, PageHeader, When } from '../../components/bits.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { useCan } from '../../session.tsx';
import { ReactorForm, type ReactorDraft } from './form.tsx';
import { RunPanel } from './run-panel.tsx';
import { SAMPLE_REACTOR, type Reactor } from './types.ts';

export function ReactorCreate() {
  const { submit, busy, error, fieldErrors } = useSubmit(async (d: ReactorDraft) => {
    const r = await api.post<Reactor>('reactors', { ...d, application: d.application ?? undefined });
    navigate(href('reactors', r.id));
  });
  return (
    <section>
      <PageHeader title="New reactor" back={{ href: href('reactors'), label: 'Reactors' }} />
      <ReactorForm initial={{ name: '', code: SAMPLE_REACTOR, configuration: {}, applicationId: '' }} submitLabel="Create reactor" busy={busy} error={error} fieldErrors={fieldErrors} onSubmit={(d) => void submit(d)} />
    </section>
  );
}

/** The reactor in the editor (read-only without reactor:update), saved with PUT; the Run panel beside it. */
export function ReactorDetail(props: { id: string }) {
  const can = useCan();
  const { data: reactor, error, reload } = useLoad(() => api.get<Reactor>(`reactors/${encodeURIComponent(props.id)}`), [props.id]);
  const [saved, setSaved] = useState(false);
  const save = useSubmit(async (d: ReactorDraft) => {
    await api.put(`reactors/${props.id}`, d);
    setSaved(true);
    reload();
  });
  const remove = useSubmit(async () => {
    await api.del(`reactors/${props.id}`);
    navigate(href('reactors'));
  });
  if (error) return <ProblemBanner error={error} />;
  if (!reactor) return <Loading />;
  return (
    <section>
      <PageHeader title={reactor.name} back={{ href: href('reactors'), label: 'Reactors' }}>
        {can('reactor:delete') && <button type="button" class="danger" onClick={() => confirmed(`Delete the reactor ${reactor.name}?`) && void remove.submit()}>Delete</button>}
      </PageHeader>
      <p class="muted"><code>{reactor.id}</code> · modified <When at={reactor.modified_at ?? reactor.created_at} /></p>
      <ProblemBanner error={remove.error} />
      {saved && !save.error && <p class="notice" role="status">Saved.</p>}
      <div class="split">
        <ReactorForm
          key={reactor.modified_at ?? reactor.created_at}
          initial={{ name: reactor.name, code: reactor.code, configuration: reactor.configuration, applicationId: reactor.application?.id ?? '' }}
          submitLabel="Save"
          readOnly={!can('reactor:update')}
          busy={save.busy}
          error={save.error}
          fieldErrors={save.fieldErrors}
          onSubmit={(d) => { setSaved(false); void save.submit(d); }}
        />
        {can('token:use') ? <RunPanel reactorId={reactor.id} /> : <p class="muted">Running a reactor needs the token:use permission, which your role does not hold.</p>}
      </div>
    </section>
  );
}
