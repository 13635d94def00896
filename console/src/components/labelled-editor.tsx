import { errorsUnder, type FieldErrors } from '../api.ts';
import { CodeEditor } from './code-editor.tsx';

/** A code editor as a form field: its label, and the API's messages for its path (`body.code`). */
export function EditorField(props: { label: string; path: string; errors: FieldErrors; id: string; value: string; onChange: (v: string) => void; readOnly?: boolean; hint?: string }) {
  const messages = errorsUnder(props.errors, props.path);
  return (
    <div class={messages.length ? 'field field-invalid' : 'field'}>
      <span class="label" id={`${props.id}-label`}>{props.label}</span>
      <CodeEditor value={props.value} onChange={props.onChange} label={props.label} id={props.id} readOnly={props.readOnly} invalid={messages.length > 0} />
      {props.hint && <div class="hint">{props.hint}</div>}
      {messages.length > 0 && <ul class="field-errors" role="alert" data-path={props.path}>{messages.map((m) => <li key={m}>{m}</li>)}</ul>}
    </div>
  );
}
