import { PageHeader } from '../../components/bits.tsx';

export function LookupPage(_props: { query: URLSearchParams }) {
  return <section><PageHeader title="3DS sessions and token intents" /><p class="muted">Coming next.</p></section>;
}
