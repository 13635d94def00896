import { TokenSearch } from './search.tsx';
import { TokenCreate } from './create.tsx';
import { TokenDetail } from './detail.tsx';

export function TokensRoutes(props: { parts: string[]; query: URLSearchParams }) {
  const [id] = props.parts;
  if (!id) return <TokenSearch initialQuery={props.query.get('q') ?? ''} />;
  if (id === 'new') return <TokenCreate />;
  return <TokenDetail id={id} />;
}
