import { CopyButton } from './bits.tsx';

/** A secret shown once (a new key): copy it now, it is never shown again. */
export function SecretOnce(props: { label: string; value: string; onDone?: () => void }) {
  return (
    <div class="secret-once" role="status">
      <p><strong>{props.label}</strong>: copy it now. Coffer shows it only this once.</p>
      <div class="secret-row">
        <code class="secret" data-testid="secret-value">{props.value}</code>
        <CopyButton value={props.value} />
      </div>
      {props.onDone && <button type="button" class="link" onClick={props.onDone}>I have copied it</button>}
    </div>
  );
}
