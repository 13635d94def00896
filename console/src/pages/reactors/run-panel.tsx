import { useState } from 'preact/hooks';
import { api, ApiProblem } from '../../api.ts';
import { Json } from '../../components/bits.tsx';
import { FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { useSubmit } from '../../hooks.ts';

/**
 * Runs the saved reactor: POST /reactors/{id}/react {args}. Shows the Reactor Response (`raw`,
 * `tokens`) or the run's problem (status, detail, its `errors` and `data`), and the lines the
 * code printed: a member's run answers with them as `console` (API keys never get them).
 */
export function RunPanel(props: { reactorId: string }) {
  const [args, setArgs] = useState('{\n  "name": "Ada"\n}');
  const [result, setResult] = useState<{ ok: boolean; status: number; body: unknown; console?: string[]; ms: number } | undefined>();
  const [argsError, setArgsError] = useState<string[]>([]);
  const run = useSubmit(async () => {
    let parsed: unknown;
    try {
      parsed = parseJsonField(args, 'The args') ?? null;
      setArgsError([]);
    } catch (e) {
      setArgsError([(e as Error).message]);
      return;
    }
    const t0 = performance.now();
    try {
      const { console: lines, ...body } = await api.post<{ raw?: unknown; tokens?: unknown; console?: string[] }>(`reactors/${props.reactorId}/react`, { args: parsed });
      setResult({ ok: true, status: 200, body, console: lines, ms: Math.round(performance.now() - t0) });
    } catch (e) {
      if (!(e instanceof ApiProblem)) throw e;
      const { status, title, detail, fieldErrors } = e;
      const lines = Array.isArray(e.body.console) ? (e.body.console as string[]) : undefined;
      const body = { title, detail, ...(Object.keys(fieldErrors).length ? { errors: fieldErrors } : {}), ...(e.body.data === undefined ? {} : { data: e.body.data }) };
      setResult({ ok: false, status, body, console: lines, ms: Math.round(performance.now() - t0) });
    }
  });
  return (
    <section class="panel run-panel" aria-labelledby="run-title">
      <h2 id="run-title">Run</h2>
      <p class="hint">Runs the saved code: save your changes first.</p>
      <form onSubmit={(e) => { e.preventDefault(); void run.submit(); }}>
        <FormField label="args (JSON)" path="body.args" errors={{ 'body.args': argsError }} id="run-args" hint="Strings may hold detokenization expressions: {{ token_id }}">
          <textarea id="run-args" value={args} onInput={(e) => setArgs(e.currentTarget.value)} spellcheck={false} />
        </FormField>
        <button type="submit" disabled={run.busy}>{run.busy ? 'Running…' : 'Run'}</button>
      </form>
      {result && (
        <div class="run-result" aria-live="polite" data-testid="run-result">
          <p class="status-line">{result.ok ? 'Result' : 'Error'}: {result.status} · {result.ms} ms</p>
          <Json value={result.body} />
          <h3 class="output-title">Console output</h3>
          {result.console && result.console.length > 0
            ? <pre class="output" data-testid="run-console">{result.console.join('\n')}</pre>
            : <p class="muted">{result.console ? 'The code printed nothing.' : 'Coffer sent no console output for this run.'}</p>}
        </div>
      )}
      <p class="hint">Token data reaches your run masked, in the arguments and in what the code prints.</p>
    </section>
  );
}
