import { useState } from 'preact/hooks';
import type { FieldErrors } from '../../api.ts';
import { ApplicationSelect } from '../../components/app-select.tsx';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { EditorField } from '../../components/labelled-editor.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { SAMPLE_REQUEST_TRANSFORM, type Proxy, type ResponseTransform } from './types.ts';

export type ProxyDraft = {
  name: string;
  destination_url: string;
  require_auth: boolean;
  request_transform: { code: string } | null;
  response_transform: ResponseTransform | null;
  application: { id: string } | null;
  configuration: Record<string, string> | null;
};

/** Create and replace (PUT): everything a proxy holds but its key. */
export function ProxyForm(props: { initial?: Proxy; submitLabel: string; readOnly?: boolean; busy: boolean; error: unknown; fieldErrors: FieldErrors; onSubmit: (d: ProxyDraft) => void }) {
  const p = props.initial;
  const [name, setName] = useState(p?.name ?? '');
  const [url, setUrl] = useState(p?.destination_url ?? '');
  const [requireAuth, setRequireAuth] = useState(p?.require_auth ?? true);
  const [reqOn, setReqOn] = useState(!!p?.request_transform);
  const [reqCode, setReqCode] = useState(p?.request_transform?.code ?? SAMPLE_REQUEST_TRANSFORM);
  const [resType, setResType] = useState<'' | 'code' | 'mask'>(p?.response_transform ? p.response_transform.type ?? 'code' : '');
  const [resCode, setResCode] = useState(p?.response_transform?.code ?? 'module.exports = async function ({ args }) {\n  return { body: args.body, headers: args.headers };\n};\n');
  const [matcher, setMatcher] = useState(p?.response_transform?.matcher ?? 'regex');
  const [replacement, setReplacement] = useState(p?.response_transform?.replacement ?? '*');
  const [expression, setExpression] = useState(p?.response_transform?.expression ?? '');
  const [appId, setAppId] = useState(p?.application_id ?? '');
  const [config, setConfig] = useState(p?.configuration ? JSON.stringify(p.configuration, null, 2) : '');
  const [local, setLocal] = useState<FieldErrors>({});
  const errors = { ...props.fieldErrors, ...local };
  const shown = ['body.name', 'body.destination_url', 'body.require_auth', 'body.request_transform', 'body.response_transform.type', 'body.response_transform.code', 'body.response_transform.matcher', 'body.response_transform.replacement', 'body.response_transform.expression', 'body.application', 'body.configuration'];
  const ro = props.readOnly;
  const submit = (e: Event) => {
    e.preventDefault();
    let configuration: Record<string, string> | null = null;
    try {
      configuration = (parseJsonField(config, 'The configuration') as Record<string, string> | undefined) ?? null;
      setLocal({});
    } catch (err) {
      setLocal({ 'body.configuration': [(err as Error).message] });
      return;
    }
    const response_transform: ResponseTransform | null = resType === 'code' ? { type: 'code', code: resCode }
      : resType === 'mask' ? { type: 'mask', matcher, replacement, ...(matcher === 'regex' ? { expression } : {}) } : null;
    props.onSubmit({ name, destination_url: url, require_auth: requireAuth, request_transform: reqOn ? { code: reqCode } : null, response_transform, application: appId ? { id: appId } : null, configuration });
  };
  return (
    <form class="form" noValidate onSubmit={submit}>
      <ProblemBanner error={props.error} />
      <div class="grid-2">
        <FormField label="Name" path="body.name" errors={errors} id="proxy-name">
          <input id="proxy-name" value={name} readOnly={ro} onInput={(e) => setName(e.currentTarget.value)} />
        </FormField>
        <FormField label="Destination URL" path="body.destination_url" errors={errors} id="proxy-url" hint="The path and query of each call are appended to it">
          <input id="proxy-url" type="url" value={url} readOnly={ro} onInput={(e) => setUrl(e.currentTarget.value)} placeholder="https://api.processor.example/v1" />
        </FormField>
      </div>
      <div class="check">
        <input type="checkbox" id="proxy-auth" checked={requireAuth} disabled={ro} onChange={(e) => setRequireAuth(e.currentTarget.checked)} />
        <label for="proxy-auth">Callers need token:use: an API key, or a member's session (off: the proxy key alone is enough)</label>
      </div>
      <FormField label="Application" path="body.application" errors={errors} id="proxy-app" hint="Detokenizes for anonymous callers; the transforms' bt SDK">
        <ApplicationSelect id="proxy-app" value={appId} onChange={setAppId} disabled={ro} />
      </FormField>
      <div class="check">
        <input type="checkbox" id="proxy-req-on" checked={reqOn} disabled={ro} onChange={(e) => setReqOn(e.currentTarget.checked)} />
        <label for="proxy-req-on">Request transform (code run on the request before it is forwarded)</label>
      </div>
      {reqOn && <EditorField label="Request transform code" path="body.request_transform" errors={errors} id="proxy-req-code" value={reqCode} onChange={setReqCode} readOnly={ro} />}
      <FormField label="Response transform" path="body.response_transform.type" errors={errors} id="proxy-res-type">
        <select id="proxy-res-type" value={resType} disabled={ro} onChange={(e) => setResType(e.currentTarget.value as '' | 'code' | 'mask')}>
          <option value="">None</option>
          <option value="code">Code</option>
          <option value="mask">Mask a pattern</option>
        </select>
      </FormField>
      {resType === 'code' && <EditorField label="Response transform code" path="body.response_transform.code" errors={errors} id="proxy-res-code" value={resCode} onChange={setResCode} readOnly={ro} />}
      {resType === 'mask' && (
        <div class="grid-3">
          <FormField label="Matcher" path="body.response_transform.matcher" errors={errors} id="proxy-matcher">
            <select id="proxy-matcher" value={matcher} disabled={ro} onChange={(e) => setMatcher(e.currentTarget.value as 'regex')}>
              <option value="regex">regex</option>
              <option value="chase_stratus_pan">chase_stratus_pan</option>
            </select>
          </FormField>
          <FormField label="Replacement" path="body.response_transform.replacement" errors={errors} id="proxy-replacement">
            <input id="proxy-replacement" value={replacement} readOnly={ro} onInput={(e) => setReplacement(e.currentTarget.value)} />
          </FormField>
          {matcher === 'regex' && (
            <FormField label="Expression" path="body.response_transform.expression" errors={errors} id="proxy-expression" hint="With a capture group">
              <input id="proxy-expression" value={expression} readOnly={ro} onInput={(e) => setExpression(e.currentTarget.value)} />
            </FormField>
          )}
        </div>
      )}
      <FormField label="Configuration (JSON object of strings, stored encrypted)" path="body.configuration" errors={errors} id="proxy-config">
        <textarea id="proxy-config" class="short" value={config} readOnly={ro} onInput={(e) => setConfig(e.currentTarget.value)} spellcheck={false} />
      </FormField>
      <FieldMessages errors={errors} except={shown} />
      {!ro && <div class="row"><button type="submit" disabled={props.busy}>{props.busy ? 'Saving…' : props.submitLabel}</button></div>}
    </form>
  );
}
