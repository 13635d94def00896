import { PageHeader } from '../../components/bits.tsx';

export function TransactionsRoutes(_props: { parts: string[]; query?: URLSearchParams }) {
  return <section><PageHeader title="Transactions" /><p class="muted">Coming next.</p></section>;
}
