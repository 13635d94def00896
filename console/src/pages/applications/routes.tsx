import { ApplicationList } from './list.tsx';
import { ApplicationDetail } from './detail.tsx';
import { ApplicationCreate } from './create.tsx';

/**
 * The pattern every resource follows: `#/applications` the list, `#/applications/new` the
 * create form, `#/applications/<id>` the detail (with its edit form and actions).
 */
export function ApplicationsRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  if (!id) return <ApplicationList />;
  if (id === 'new') return <ApplicationCreate />;
  return <ApplicationDetail id={id} />;
}
