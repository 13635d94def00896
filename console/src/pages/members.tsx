import { PageHeader } from '../components/bits.tsx';

export function MembersPage() {
  return <section><PageHeader title="Members" /><p class="muted">Coming next.</p></section>;
}
