import { PageHeader } from '../../components/bits.tsx';

export function WebhooksRoutes(_props: { parts: string[]; query?: URLSearchParams }) {
  return <section><PageHeader title="Webhooks" /><p class="muted">Coming next.</p></section>;
}
