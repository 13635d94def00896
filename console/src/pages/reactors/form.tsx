import { useState } from 'preact/hooks';
import type { FieldErrors } from '../../api.ts';
import { ApplicationSelect } from '../../components/app-select.tsx';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { EditorField } from '../../components/labelled-editor.tsx';
import { ProblemBanner } from '../../components/problem.tsx';

export type ReactorDraft = { name: string; code: string; configuration: Record<string, string>; application: { id: string } | null };

/** Create and edit (PUT: the whole reactor): name, code in the editor, configuration, application. */
export function ReactorForm(props: {
  initial: { name: string; code: string; configuration: Record<string, string>; applicationId: string };
  submitLabel: string;
  readOnly?: boolean;
  busy: boolean;
  error: unknown;
  fieldErrors: FieldErrors;
  onSubmit: (d: ReactorDraft) => void;
}) {
  const [name, setName] = useState(props.initial.name);
  const [code, setCode] = useState(props.initial.code);
  const [config, setConfig] = useState(JSON.stringify(props.initial.configuration, null, 2));
  const [appId, setAppId] = useState(props.initial.applicationId);
  const [local, setLocal] = useState<FieldErrors>({});
  const errors = { ...props.fieldErrors, ...local };
  const shown = ['body.name', 'body.code', 'body.configuration', 'body.application'];
  return (
    <form class="form" noValidate onSubmit={(e) => {
      e.preventDefault();
      let configuration: Record<string, string> = {};
      try {
        configuration = (parseJsonField(config, 'The configuration') ?? {}) as Record<string, string>;
        setLocal({});
      } catch (err) {
        setLocal({ 'body.configuration': [(err as Error).message] });
        return;
      }
      props.onSubmit({ name, code, configuration, application: appId ? { id: appId } : null });
    }}>
      <ProblemBanner error={props.error} />
      <div class="grid-2">
        <FormField label="Name" path="body.name" errors={errors} id="reactor-name">
          <input id="reactor-name" value={name} readOnly={props.readOnly} onInput={(e) => setName(e.currentTarget.value)} />
        </FormField>
        <FormField label="Application" path="body.application" errors={errors} id="reactor-app" hint="Its permissions are the code's bt SDK's; none: bt is null">
          <ApplicationSelect id="reactor-app" value={appId} onChange={setAppId} disabled={props.readOnly} />
        </FormField>
      </div>
      <EditorField label="Code" path="body.code" errors={errors} id="reactor-code" value={code} onChange={setCode} readOnly={props.readOnly} hint="CommonJS: module.exports = async function ({ args, configuration, bt }) { return { raw: … }; }" />
      <FormField label="Configuration (JSON object of strings, stored encrypted)" path="body.configuration" errors={errors} id="reactor-config">
        <textarea id="reactor-config" class="short" value={config} readOnly={props.readOnly} onInput={(e) => setConfig(e.currentTarget.value)} spellcheck={false} />
      </FormField>
      <FieldMessages errors={errors} except={shown} />
      {!props.readOnly && <div class="row"><button type="submit" disabled={props.busy}>{props.busy ? 'Saving…' : props.submitLabel}</button></div>}
    </form>
  );
}
