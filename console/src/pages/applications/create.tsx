import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { PageHeader } from '../../components/bits.tsx';
import { SecretOnce } from '../../components/secret-once.tsx';
import { useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { ApplicationForm } from './form.tsx';
import type { Application } from './types.ts';

export function ApplicationCreate() {
  const [created, setCreated] = useState<Application | undefined>();
  const { submit, busy, error, fieldErrors } = useSubmit(async (d: { name: string; type: string; permissions: string[]; rules: unknown[]; create_key: boolean }) => {
    setCreated(await api.post<Application>('applications', d));
  });
  if (created) {
    return (
      <section>
        <PageHeader title={`Created ${created.name}`} back={{ href: href('applications'), label: 'Applications' }} />
        {created.key && <SecretOnce label="The application's key" value={created.key} />}
        <p><a class="button" href={href('applications', created.id)}>Open the application</a></p>
      </section>
    );
  }
  return (
    <section>
      <PageHeader title="New application" back={{ href: href('applications'), label: 'Applications' }} />
      <ApplicationForm
        mode="create"
        initial={{ name: '', type: 'private', permissions: [], rules: [], create_key: true }}
        busy={busy}
        error={error}
        fieldErrors={fieldErrors}
        onSubmit={(d) => void submit(d)}
        onCancel={() => navigate(href('applications'))}
      />
    </section>
  );
}
