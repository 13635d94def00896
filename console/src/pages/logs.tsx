import { PageHeader } from '../components/bits.tsx';

export function LogsPage(_props: { query: URLSearchParams }) {
  return <section><PageHeader title="Logs" /><p class="muted">Coming next.</p></section>;
}
