import { useState } from 'preact/hooks';
import { apiBase, csrfToken } from '../../api.ts';
import { FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { useSubmit } from '../../hooks.ts';

type Answer = { status: number; statusText: string; headers: [string, string][]; body: string; ms: number };

/**
 * Sends a request through the proxy as the signed-in member: /proxy + path with the proxy's key
 * in SVC-PROXY-KEY, the session cookie and X-CSRF-Token (Coffer forwards neither), and shows
 * what came back: the destination's status, headers and body (or Coffer's problem).
 */
export function TryPanel(props: { proxyKey: string }) {
  const [method, setMethod] = useState('POST');
  const [path, setPath] = useState('/');
  const [headers, setHeaders] = useState('{\n  "Content-Type": "application/json"\n}');
  const [body, setBody] = useState('{\n  "card": "{{ token_id }}"\n}');
  const [answer, setAnswer] = useState<Answer | undefined>();
  const [local, setLocal] = useState<Record<string, string[]>>({});
  const send = useSubmit(async () => {
    let extra: Record<string, string> = {};
    try {
      extra = (parseJsonField(headers, 'The headers') ?? {}) as Record<string, string>;
      setLocal({});
    } catch (e) {
      setLocal({ headers: [(e as Error).message] });
      return;
    }
    const t0 = performance.now();
    const suffix = path.startsWith('/') ? path : `/${path}`;
    const res = await fetch(`${apiBase()}proxy${suffix === '/' ? '' : suffix}`, {
      method,
      headers: { ...extra, 'SVC-PROXY-KEY': props.proxyKey, 'X-CSRF-Token': csrfToken() },
      body: method === 'GET' || method === 'HEAD' ? undefined : body,
      credentials: 'same-origin',
    });
    const text = await res.text();
    setAnswer({ status: res.status, statusText: res.statusText, headers: [...res.headers.entries()], body: text, ms: Math.round(performance.now() - t0) });
  });
  let shownBody = answer?.body ?? '';
  try {
    shownBody = JSON.stringify(JSON.parse(shownBody), null, 2);
  } catch {
    // Not JSON: shown as it came.
  }
  return (
    <section class="panel try-panel" aria-labelledby="try-title">
      <h2 id="try-title">Try it</h2>
      <form onSubmit={(e) => { e.preventDefault(); void send.submit(); }}>
        <div class="grid-2">
          <FormField label="Method" path="method" id="try-method">
            <select id="try-method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
              {['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => <option key={m} value={m}>{m}</option>)}
            </select>
          </FormField>
          <FormField label="Path" path="path" id="try-path" hint="Appended to the destination URL">
            <input id="try-path" value={path} onInput={(e) => setPath(e.currentTarget.value)} />
          </FormField>
        </div>
        <FormField label="Headers (JSON)" path="headers" errors={local} id="try-headers">
          <textarea id="try-headers" class="short" value={headers} onInput={(e) => setHeaders(e.currentTarget.value)} spellcheck={false} />
        </FormField>
        {method !== 'GET' && (
          <FormField label="Body" path="body" id="try-body" hint="{{ token_id }} expressions are detokenized on the way">
            <textarea id="try-body" value={body} onInput={(e) => setBody(e.currentTarget.value)} spellcheck={false} />
          </FormField>
        )}
        <button type="submit" disabled={send.busy}>{send.busy ? 'Sending…' : 'Send'}</button>
      </form>
      {send.error ? <p class="problem" role="alert">{(send.error as Error).message}</p> : null}
      {answer && (
        <div aria-live="polite" data-testid="try-result">
          <p class="status-line">Status: {answer.status} {answer.statusText} · {answer.ms} ms</p>
          <details>
            <summary>Headers ({answer.headers.length})</summary>
            <pre class="output">{answer.headers.map(([k, v]) => `${k}: ${v}`).join('\n')}</pre>
          </details>
          <pre class="output" data-testid="try-body">{shownBody}</pre>
        </div>
      )}
    </section>
  );
}
