import { useState } from 'preact/hooks';
import { api, errorsUnder, type FieldErrors } from '../../api.ts';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad } from '../../hooks.ts';
import type { Draft, Webhook } from './types.ts';

/** Create and replace (PUT): name, URL, notify e-mail, status, and the event types from the catalogue. */
export function WebhookForm(props: { initial?: Webhook; submitLabel: string; busy: boolean; error: unknown; fieldErrors: FieldErrors; onSubmit: (d: Draft) => void }) {
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
