import { WebhookList } from './list.tsx';
import { WebhookCreate, WebhookDetail } from './detail.tsx';

export function WebhooksRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  if (!id) return <WebhookList />;
  if (id === 'new') return <WebhookCreate />;
  return <WebhookDetail id={id} />;
}
