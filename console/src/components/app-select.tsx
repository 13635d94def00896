import { api, type OffsetPage } from '../api.ts';
import { useLoad } from '../hooks.ts';
import type { Application } from '../pages/applications/types.ts';

/** Picks one of the tenant's private or public applications (or none), for reactors and proxies. */
export function ApplicationSelect(props: { id: string; value: string; onChange: (id: string) => void; disabled?: boolean }) {
  const { data } = useLoad(() => api.get<OffsetPage<Application>>('applications', { size: 100 }), []);
  const apps = (data?.data ?? []).filter((a) => a.type !== 'management');
  return (
    <select id={props.id} value={props.value} disabled={props.disabled} onChange={(e) => props.onChange(e.currentTarget.value)}>
      <option value="">None</option>
      {apps.map((a) => <option key={a.id} value={a.id}>{a.name} ({a.type})</option>)}
      {props.value && !apps.some((a) => a.id === props.value) && <option value={props.value}>{props.value}</option>}
    </select>
  );
}
