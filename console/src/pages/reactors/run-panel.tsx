import { useState } from 'preact/hooks';
import { api, ApiProblem } from '../../api.ts';
import { Json } from '../../components/bits.tsx';
import { FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { useSubmit } from '../../hooks.ts';

/**
 * Runs the saved reactor: POST /reactors/{id}/react {args}. Shows the Reactor Response (`raw`,
 * `tokens`) or the run's problem (status, detail, and its `data`/`errors`). The code's console
 * lines are not shown: Coffer never returns them (they may hold detokenized data).
 */
export function RunPanel(props: { reactorId: string }) {
  const [args, setArgs] = useState('{\n  "name": "Ada"\n}');
  const [result, setResult] = useState<{ ok: boolean; status: number; body: unknown; ms: number } | undefined>();
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
      const body = await api.post(`reactors/${props.reactorId}/react`, { args: parsed });
      setResult({ ok: true, status: 200, body, ms: Math.round(performance.now() - t0) });
    } catch (e) {
      if (!(e instanceof ApiProblem)) throw e;
      const { status, title, detail, fieldErrors } = e;
      setResult({ ok: false, status, body: { title, detail, ...(Object.keys(fieldErrors).length ? { errors: fieldErrors } : {}) }, ms: Math.round(performance.now() - t0) });
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
        </div>
      )}
      <p class="hint">The code's <code>console.log</code> lines stay in the sandbox: Coffer does not return them. Put what you want to see in <code>raw</code>.</p>
    </section>
  );
}
