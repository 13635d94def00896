import { useState } from 'preact/hooks';
import { errorsUnder, type FieldErrors } from '../../api.ts';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { PermissionPicker } from '../../components/permission-picker.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { RulesEditor } from './rules-editor.tsx';
import { APPLICATION_TYPES, type AccessRule, type Application } from './types.ts';

export type ApplicationDraft = { name: string; type: Application['type']; permissions: string[]; rules: AccessRule[]; create_key: boolean };

/**
 * The create and edit form. `mode: 'edit'` leaves out what cannot change (type, a first key).
 * Each API message shows on the field its path names; any path no field shows is listed at the end.
 */
export function ApplicationForm(props: {
  mode: 'create' | 'edit';
  initial: ApplicationDraft;
  busy: boolean;
  error: unknown;
  fieldErrors: FieldErrors;
  onSubmit: (draft: ApplicationDraft) => void;
  onCancel?: () => void;
}) {
  const [d, setD] = useState(props.initial);
  const errors = props.fieldErrors;
  // What the fields show; the rules editor shows each rule's own fields (not shown for management).
  const ruleFields = ['priority', 'container', 'transform', 'description', 'conditions', 'permissions'];
  const shown = ['body.name', 'body.type', 'body.permissions', 'body.create_key',
    ...(d.type === 'management' ? [] : d.rules.flatMap((_, i) => ruleFields.map((f) => `body.rules[${i}].${f}`)))];
  return (
    <form class="form" onSubmit={(e) => { e.preventDefault(); props.onSubmit(d); }} noValidate>
      <ProblemBanner error={props.error} />
      <FormField label="Name" path="body.name" errors={errors} id="app-name">
        <input id="app-name" name="name" value={d.name} onInput={(e) => setD({ ...d, name: e.currentTarget.value })} />
      </FormField>
      {props.mode === 'create' && (
        <FormField label="Type" path="body.type" errors={errors} id="app-type" hint="private: your servers · public: browsers and apps (can only create tokens) · management: administers the tenant">
          <select id="app-type" value={d.type} onChange={(e) => setD({ ...d, type: e.currentTarget.value as Application['type'], permissions: [], rules: [] })}>
            {APPLICATION_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </FormField>
      )}
      <PermissionPicker legend="Permissions" applicationType={d.type} value={d.permissions} onChange={(permissions) => setD({ ...d, permissions })} errors={errorsUnder(errors, 'body.permissions')} idPrefix="app-perm" />
      {d.type !== 'management' && <RulesEditor applicationType={d.type} rules={d.rules} onChange={(rules) => setD({ ...d, rules })} errors={errors} />}
      {props.mode === 'create' && (
        <div class="check">
          <input type="checkbox" id="app-create-key" checked={d.create_key} onChange={(e) => setD({ ...d, create_key: e.currentTarget.checked })} />
          <label for="app-create-key">Create a key now</label>
        </div>
      )}
      <FieldMessages errors={errors} except={shown} />
      <div class="row">
        <button type="submit" disabled={props.busy}>{props.busy ? 'Saving…' : props.mode === 'create' ? 'Create application' : 'Save'}</button>
        {props.onCancel && <button type="button" class="secondary" onClick={props.onCancel}>Cancel</button>}
      </div>
    </form>
  );
}
