import { api } from '../api.ts';
import { useLoad } from '../hooks.ts';
import type { Permission } from '../pages/applications/types.ts';

/** Checkboxes for the permissions GET /permissions?application_type=… offers that type. */
export function PermissionPicker(props: { applicationType: string; value: string[]; onChange: (v: string[]) => void; legend: string; errors?: string[]; idPrefix: string }) {
  const { data, error } = useLoad(() => api.get<Permission[]>('permissions', { application_type: props.applicationType }), [props.applicationType]);
  const toggle = (name: string, on: boolean) => props.onChange(on ? [...props.value, name] : props.value.filter((p) => p !== name));
  // Granted names the catalogue does not offer this type still show, so they can be removed.
  const names = [...(data ?? []).map((p) => p.type), ...props.value.filter((v) => !(data ?? []).some((p) => p.type === v))];
  return (
    <fieldset class={props.errors?.length ? 'permissions field-invalid' : 'permissions'}>
      <legend>{props.legend}</legend>
      {error ? <p class="muted">The permission catalogue could not be loaded.</p> : null}
      <div class="checks">
        {names.map((name) => {
          const id = `${props.idPrefix}-${name.replace(/[^a-z0-9]+/gi, '-')}`;
          const def = data?.find((p) => p.type === name);
          return (
            <div class="check" key={name}>
              <input type="checkbox" id={id} checked={props.value.includes(name)} onChange={(e) => toggle(name, e.currentTarget.checked)} />
              <label for={id}><code>{name}</code>{def && <span class="muted"> {def.description}</span>}</label>
            </div>
          );
        })}
      </div>
      {props.errors && props.errors.length > 0 && <ul class="field-errors" role="alert">{props.errors.map((m) => <li key={m}>{m}</li>)}</ul>}
    </fieldset>
  );
}
