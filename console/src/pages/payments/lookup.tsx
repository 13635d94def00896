import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Json, PageHeader } from '../../components/bits.tsx';
import { FormField } from '../../components/form-field.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useSubmit } from '../../hooks.ts';
import { useCan } from '../../session.tsx';

/**
 * 3-D Secure sessions and token intents have no list route: they are looked up by id
 * (GET /3ds/sessions/{id}, GET /token-intents/{id}), as support does with an id from a log.
 */
export function LookupPage(props: { query: URLSearchParams }) {
  const can = useCan();
  return (
    <section>
      <PageHeader title="3DS sessions and token intents" />
      <p class="muted">These have no list: paste an id (from your logs, a webhook or a transaction) to see one.</p>
      {can('3ds:session:read') ? <Lookup label="3DS session ID" path="3ds/sessions" id="lookup-3ds" initial={props.query.get('3ds') ?? ''} /> : <p class="muted">Reading 3DS sessions needs 3ds:session:read.</p>}
      {can('token-intent:read') ? <Lookup label="Token intent ID" path="token-intents" id="lookup-intent" initial={props.query.get('intent') ?? ''} /> : <p class="muted">Reading token intents needs token-intent:read.</p>}
    </section>
  );
}

function Lookup(props: { label: string; path: string; id: string; initial: string }) {
  const [value, setValue] = useState(props.initial);
  const [found, setFound] = useState<unknown>();
  const look = useSubmit(async () => {
    setFound(undefined);
    setFound(await api.get(`${props.path}/${encodeURIComponent(value.trim())}`));
  });
  return (
    <form class="form" onSubmit={(e) => { e.preventDefault(); void look.submit(); }}>
      <FormField label={props.label} path="params.id" errors={look.fieldErrors} id={props.id}>
        <input id={props.id} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </FormField>
      <button type="submit" disabled={look.busy || !value.trim()}>Look up</button>
      {Object.keys(look.fieldErrors).length === 0 && <ProblemBanner error={look.error} />}
      {found !== undefined && <Json value={found} />}
    </form>
  );
}
