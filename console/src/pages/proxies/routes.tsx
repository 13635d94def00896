import { PageHeader } from '../../components/bits.tsx';

export function ProxiesRoutes(_props: { parts: string[]; query?: URLSearchParams }) {
  return <section><PageHeader title="Proxies" /><p class="muted">Coming next.</p></section>;
}
