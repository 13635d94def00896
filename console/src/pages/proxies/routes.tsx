import { ProxyList } from './list.tsx';
import { ProxyCreate, ProxyDetail } from './detail.tsx';

export function ProxiesRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  if (!id) return <ProxyList />;
  if (id === 'new') return <ProxyCreate />;
  return <ProxyDetail id={id} />;
}
