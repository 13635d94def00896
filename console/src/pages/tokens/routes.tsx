import { PageHeader } from '../../components/bits.tsx';

export function TokensRoutes(_props: { parts: string[]; query?: URLSearchParams }) {
  return <section><PageHeader title="Tokens" /><p class="muted">Coming next.</p></section>;
}
