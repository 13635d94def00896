import { useEffect, useState } from 'preact/hooks';
import { api, type CursorPage } from '../api.ts';
import { EmptyState, PageHeader, When } from '../components/bits.tsx';
import { DraftInput, FieldMessages, FormField } from '../components/form-field.tsx';
import { CursorPager } from '../components/pager.tsx';
import { ListTable } from '../components/list-table.tsx';
import { fieldErrorsOf, ProblemBanner } from '../components/problem.tsx';
import { isoOf } from '../dates.ts';
import { useLoad } from '../hooks.ts';

type LogEvent = { id: string; actor_id: string | null; actor_type: string | null; entity_type: string; entity_id: string | null; operation: string; message: string; created_at: string };
type Filters = { entity_type: string; entity_id: string; start: string; end: string };

/** The audit log, newest first (GET /logs, cursor pages), filtered by entity and time. */
export function LogsPage(props: { query: URLSearchParams }) {
  const initial: Filters = { entity_type: props.query.get('entity_type') ?? '', entity_id: props.query.get('entity_id') ?? '', start: '', end: '' };
  const [draft, setDraft] = useState(initial);
  const [filters, setFilters] = useState(initial);
  const [cursors, setCursors] = useState<string[]>([]);
  const types = useLoad(() => api.get<string[]>('logs/entity-types'), []);
  const start = cursors.at(-1);
  const { data, error, loading, reload } = useLoad(() => api.get<CursorPage<LogEvent>>('logs', {
    entity_type: filters.entity_type, entity_id: filters.entity_id, start_date: isoOf(filters.start), end_date: isoOf(filters.end), start, size: 50,
  }), [filters, start]);
  // Following: the first page read again every 10 seconds, newest first.
  const [follow, setFollow] = useState(false);
  useEffect(() => {
    if (!follow || cursors.length > 0) return;
    const t = setInterval(reload, 10_000);
    return () => clearInterval(t);
  }, [follow, cursors.length, reload]);
  const errors = fieldErrorsOf(error);
  const shown = ['query.entity_type', 'query.entity_id', 'query.start_date', 'query.end_date'];
  return (
    <section>
      <PageHeader title="Logs">
        <div class="check">
          <input type="checkbox" id="log-follow" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
          <label for="log-follow">Follow (every 10 s)</label>
        </div>
        <button type="button" class="secondary" onClick={reload}>Refresh</button>
      </PageHeader>
      <form class="filters" role="search" onSubmit={(e) => { e.preventDefault(); setCursors([]); setFilters(draft); }}>
        <FormField label="Entity type" path="query.entity_type" errors={errors} id="log-type">
          <select id="log-type" value={draft.entity_type} onChange={(e) => setDraft({ ...draft, entity_type: e.currentTarget.value })}>
            <option value="">Any</option>
            {(types.data ?? []).map((t) => <option key={t} value={t}>{t}</option>)}
          </select>
        </FormField>
        <DraftInput label="Entity ID" path="query.entity_id" errors={errors} id="log-id" draft={draft} name="entity_id" setDraft={setDraft} />
        <DraftInput label="From" path="query.start_date" errors={errors} id="log-start" type="datetime-local" draft={draft} name="start" setDraft={setDraft} />
        <DraftInput label="To" path="query.end_date" errors={errors} id="log-end" type="datetime-local" draft={draft} name="end" setDraft={setDraft} />
        <button type="submit">Filter</button>
      </form>
      <FieldMessages errors={errors} except={shown} />
      {Object.keys(errors).length === 0 && <ProblemBanner error={error} />}
      <ListTable
        data={data}
        loading={loading}
        head={['When', 'Entity', 'Operation', 'Message', 'Actor']}
        empty={
          <EmptyState title="Nothing logged matches">Every change to the tenant is written here: try wider filters.</EmptyState>
        }
        row={(l) => (
          <>
            <td><When at={l.created_at} /></td>
            <td>{l.entity_type}{l.entity_id && <><br /><code>{l.entity_id}</code></>}</td>
            <td>{l.operation}</td>
            <td>{l.message}</td>
            <td>{l.actor_type ?? '—'}{l.actor_id && <><br /><code>{l.actor_id}</code></>}</td>
          </>
        )}
        pager={<CursorPager page={data?.pagination} atStart={cursors.length === 0} onFirst={() => setCursors([])} onNext={(c) => setCursors([...cursors, c])} />}
      />
    </section>
  );
}
