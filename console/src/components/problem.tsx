import { ApiProblem } from '../api.ts';

/** A failure's title and detail, for the top of a form or a page; nothing when there is none. */
export function ProblemBanner(props: { error: unknown }) {
  const e = props.error;
  if (!e) return null;
  const title = e instanceof ApiProblem ? `${e.title}${e.status ? ` (${e.status})` : ''}` : 'Error';
  const detail = e instanceof ApiProblem ? e.detail : (e as Error).message ?? String(e);
  return (
    <div class="problem" role="alert">
      <strong>{title}</strong>
      {detail && <span> {detail}</span>}
    </div>
  );
}

/** The field errors of a failure (an ApiProblem's `errors`), or none. */
export function fieldErrorsOf(e: unknown): Record<string, string[]> {
  return e instanceof ApiProblem ? e.fieldErrors : {};
}
