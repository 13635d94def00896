import { PageHeader } from '../../components/bits.tsx';

export function ReactorsRoutes(_props: { parts: string[]; query?: URLSearchParams }) {
  return <section><PageHeader title="Reactors" /><p class="muted">Coming next.</p></section>;
}
