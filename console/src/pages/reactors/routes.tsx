import { ReactorList } from './list.tsx';
import { ReactorCreate, ReactorDetail } from './detail.tsx';

export function ReactorsRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  if (!id) return <ReactorList />;
  if (id === 'new') return <ReactorCreate />;
  return <ReactorDetail id={id} />;
}
