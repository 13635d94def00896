import { useCallback, useEffect, useState } from 'preact/hooks';
import type { FieldErrors } from './api.ts';
import { fieldErrorsOf } from './components/problem.tsx';

/** Loads data when `deps` change; `reload()` loads again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; loading: boolean; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => live && setState({ data, error: undefined, loading: false }),
      (error) => live && setState({ data: undefined, error, loading: false }),
    );
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** A form's submission: busy while it runs, the failure and its field errors after. */
export function useSubmit<A extends unknown[]>(action: (...args: A) => Promise<unknown>): {
  submit: (...args: A) => Promise<boolean>;
  busy: boolean;
  error: unknown;
  fieldErrors: FieldErrors;
  clear: () => void;
} {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const submit = async (...args: A) => {
    setBusy(true);
    setError(undefined);
    try {
      await action(...args);
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { submit, busy, error, fieldErrors: fieldErrorsOf(error), clear: () => setError(undefined) };
}
