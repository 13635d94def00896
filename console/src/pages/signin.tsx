import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { FormField, fieldId } from '../components/form-field.tsx';
import { ProblemBanner } from '../components/problem.tsx';
import { useSubmit } from '../hooks.ts';

/**
 * Signing in: POST /signin e-mails a one-time link. The link opens Coffer's own sign-in page,
 * whose button sets the session cookies; then the console (this page, reloaded) is signed in.
 */
export function SigninPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | undefined>();
  const { submit, busy, error, fieldErrors } = useSubmit(async () => {
    await api.post('signin', { email });
    setSent(email);
  });
  const [id] = useState(() => fieldId('email'));
  return (
    <main class="signin">
      <div class="signin-card">
        <p class="brand">Coffer Console</p>
        {sent ? (
          <section aria-live="polite">
            <h1>Check your e-mail</h1>
            <p>If <strong>{sent}</strong> belongs to a member, a sign-in link is on its way. Open it, press <em>Sign in</em>, then come back to this page.</p>
            <div class="row">
              <button type="button" onClick={() => window.location.reload()}>I have signed in</button>
              <button type="button" class="secondary" onClick={() => setSent(undefined)}>Use another address</button>
            </div>
          </section>
        ) : (
          <form noValidate onSubmit={(e) => { e.preventDefault(); void submit(); }}>
            <h1>Sign in</h1>
            <p class="muted">We e-mail you a link that signs you in. No password.</p>
            <ProblemBanner error={Object.keys(fieldErrors).length ? undefined : error} />
            <FormField label="E-mail address" path="body.email" errors={fieldErrors} id={id}>
              <input id={id} type="email" autocomplete="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </FormField>
            <button type="submit" disabled={busy}>{busy ? 'Sending…' : 'E-mail me a sign-in link'}</button>
          </form>
        )}
      </div>
    </main>
  );
}
