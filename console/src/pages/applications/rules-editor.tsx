import type { FieldErrors } from '../../api.ts';
import { errorsUnder } from '../../api.ts';
import { FormField } from '../../components/form-field.tsx';
import { PermissionPicker } from '../../components/permission-picker.tsx';
import type { AccessRule, Condition } from './types.ts';

/**
 * Access rules: which tokens (by container and conditions) the application reaches, with which
 * permissions, and how their data is shown (transform). Errors come back as `body.rules[i]…`.
 */
export function RulesEditor(props: { applicationType: string; rules: AccessRule[]; onChange: (r: AccessRule[]) => void; errors: FieldErrors }) {
  const { rules, onChange } = props;
  const set = (i: number, patch: Partial<AccessRule>) => onChange(rules.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const setCond = (i: number, k: number, patch: Partial<Condition>) => set(i, { conditions: (rules[i].conditions ?? []).map((c, j) => (j === k ? { ...c, ...patch } : c)) });
  return (
    <fieldset class="rules">
      <legend>Access rules</legend>
      <p class="hint">Optional. A rule grants its permissions on the tokens of a container (narrowed by conditions), with a transform for their data. See the <a href="../docs/guides/vault" target="_blank" rel="noopener">vault guide</a>.</p>
      {rules.map((rule, i) => {
        const at = `body.rules[${i}]`;
        const id = (f: string) => `rule-${i}-${f}`;
        return (
          <div class="rule" key={i}>
            <div class="rule-head">
              <strong>Rule {i + 1}</strong>
              <button type="button" class="link danger" onClick={() => onChange(rules.filter((_, j) => j !== i))}>Remove rule {i + 1}</button>
            </div>
            <div class="grid-3">
              <FormField label="Priority" path={`${at}.priority`} errors={props.errors} id={id('priority')}>
                <input id={id('priority')} type="number" min={1} value={rule.priority} onInput={(e) => set(i, { priority: Number(e.currentTarget.value) })} />
              </FormField>
              <FormField label="Container" path={`${at}.container`} errors={props.errors} id={id('container')} hint="e.g. /pci/">
                <input id={id('container')} value={rule.container ?? ''} onInput={(e) => set(i, { container: e.currentTarget.value || undefined })} />
              </FormField>
              <FormField label="Transform" path={`${at}.transform`} errors={props.errors} id={id('transform')}>
                <select id={id('transform')} value={rule.transform ?? 'redact'} onChange={(e) => set(i, { transform: e.currentTarget.value as AccessRule['transform'] })}>
                  <option value="redact">redact</option>
                  <option value="mask">mask</option>
                  <option value="reveal">reveal</option>
                </select>
              </FormField>
            </div>
            <FormField label="Description" path={`${at}.description`} errors={props.errors} id={id('description')}>
              <input id={id('description')} value={rule.description ?? ''} onInput={(e) => set(i, { description: e.currentTarget.value || undefined })} />
            </FormField>
            <div class="conditions">
              <span class="label">Conditions</span>
              {(rule.conditions ?? []).map((c, k) => (
                <div class="condition" key={k}>
                  <label class="sr-only" for={id(`c${k}-attr`)}>Condition {k + 1} attribute</label>
                  <select id={id(`c${k}-attr`)} value={c.attribute} onChange={(e) => setCond(i, k, { attribute: e.currentTarget.value as Condition['attribute'] })}>
                    <option value="container">container</option>
                    <option value="id">id</option>
                  </select>
                  <label class="sr-only" for={id(`c${k}-op`)}>Condition {k + 1} operator</label>
                  <select id={id(`c${k}-op`)} value={c.operator} onChange={(e) => setCond(i, k, { operator: e.currentTarget.value as Condition['operator'] })}>
                    <option value="starts_with">starts with</option>
                    <option value="equals">equals</option>
                  </select>
                  <label class="sr-only" for={id(`c${k}-value`)}>Condition {k + 1} value</label>
                  <input id={id(`c${k}-value`)} value={c.value} onInput={(e) => setCond(i, k, { value: e.currentTarget.value })} />
                  <button type="button" class="link danger" onClick={() => set(i, { conditions: (rule.conditions ?? []).filter((_, j) => j !== k) })}>Remove</button>
                </div>
              ))}
              <button type="button" class="secondary small" onClick={() => set(i, { conditions: [...(rule.conditions ?? []), { attribute: 'container', operator: 'starts_with', value: '' }] })}>Add a condition</button>
              {errorsUnder(props.errors, `${at}.conditions`).map((m) => <p class="field-errors" role="alert" key={m}>{m}</p>)}
            </div>
            <PermissionPicker
              legend="Permissions of this rule"
              applicationType={props.applicationType}
              value={rule.permissions}
              onChange={(permissions) => set(i, { permissions })}
              errors={errorsUnder(props.errors, `${at}.permissions`)}
              idPrefix={`rule-${i}-perm`}
            />
          </div>
        );
      })}
      <button type="button" class="secondary" onClick={() => onChange([...rules, { priority: (rules.length + 1) * 10, transform: 'redact', permissions: [] }])}>Add a rule</button>
    </fieldset>
  );
}
