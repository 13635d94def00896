import type { ComponentChildren } from 'preact';
import { errorsUnder, type FieldErrors } from '../api.ts';

let next = 0;
/** A stable, unique id for a field's input, so that its label and its messages are tied to it. */
export function fieldId(path: string): string {
  return `f-${path.replace(/[^A-Za-z0-9_-]+/g, '-')}-${++next}`;
}

/**
 * One form field: its label, the input (a child, given `id`), a hint, and the API's own messages
 * for the field path it names (`body.name`): a problem+json's `errors[path]` shows here, and
 * those of the paths inside it with their place (`body.data.number` under Data as `number: …`).
 */
export function FormField(props: {
  label: string;
  path: string;
  errors?: FieldErrors;
  hint?: ComponentChildren;
  id: string;
  children: ComponentChildren;
}) {
  const messages = props.errors ? errorsUnder(props.errors, props.path) : [];
  const errorId = `${props.id}-errors`;
  return (
    <div class={messages.length ? 'field field-invalid' : 'field'}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.hint && <div class="hint">{props.hint}</div>}
      {messages.length > 0 && (
        <ul class="field-errors" id={errorId} role="alert" data-path={props.path}>
          {messages.map((m) => <li key={m}>{m}</li>)}
        </ul>
      )}
    </div>
  );
}

/** Whether `path` is one of `paths` or inside one of them. */
export function isUnder(path: string, paths: string[]): boolean {
  return paths.some((p) => path === p || path.startsWith(`${p}.`) || path.startsWith(`${p}[`));
}

/**
 * The messages no field of the form shows: every path that is not one of `except` nor inside
 * one, listed with its path, so that no message the API sent is ever lost.
 */
export function FieldMessages(props: { errors: FieldErrors; except: string[] }) {
  const entries = Object.entries(props.errors).filter(([k]) => !isUnder(k, props.except));
  if (!entries.length) return null;
  return (
    <ul class="field-errors" role="alert">
      {entries.flatMap(([k, v]) => v.map((m) => <li key={k + m}><code>{k}</code> {m}</li>))}
    </ul>
  );
}

/**
 * One filter of a list page: an input bound to `draft[name]`, in a FormField. A page keeps its
 * filters as one draft object, applied when its form is submitted.
 */
export function DraftInput<D extends Record<string, string>>(props: {
  label: string;
  path: string;
  errors: FieldErrors;
  id: string;
  draft: D;
  name: keyof D & string;
  setDraft: (draft: D) => void;
  type?: 'datetime-local';
  inputMode?: 'numeric';
}) {
  const { draft, name, setDraft } = props;
  const onInput = (e: { currentTarget: HTMLInputElement }) => setDraft({ ...draft, [name]: e.currentTarget.value });
  return (
    <FormField label={props.label} path={props.path} errors={props.errors} id={props.id}>
      {props.type === 'datetime-local'
        ? <input id={props.id} type="datetime-local" value={draft[name]} onInput={onInput} />
        : <input id={props.id} inputMode={props.inputMode} value={draft[name]} onInput={onInput} />}
    </FormField>
  );
}
