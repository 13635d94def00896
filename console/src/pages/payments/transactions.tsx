import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, EmptyState, Facts, Json, Loading, PageHeader, When } from '../../components/bits.tsx';
import { DraftInput, FieldMessages, FormField } from '../../components/form-field.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { fieldErrorsOf, ProblemBanner } from '../../components/problem.tsx';
import { isoOf } from '../../dates.ts';
import { useLoad } from '../../hooks.ts';
import { href } from '../../router.ts';
import { useCan } from '../../session.tsx';

type Page<T> = { pagination: { limit: number; next_cursor: string | null; previous_cursor: string | null }; data: T[] };
type Transaction = {
  id: string; status: string; intent: string; amount: number; currency: string; authorized_amount: number; captured_amount: number; refunded_amount: number;
  external_identifier: string | null; payment_source: string; payment_method: { scheme: string | null; last4: string; expiration_date: string | null; token?: string };
  metadata: Record<string, unknown> | null; created_at: string; updated_at?: string; [k: string]: unknown;
};
type Refund = { id: string; status: string; amount: number; currency: string; reason: string | null; error_code: string | null; created_at: string };

export const TRANSACTION_STATUSES = ['processing', 'buyer_approval_pending', 'authorization_succeeded', 'authorization_failed', 'authorization_declined', 'capture_pending', 'capture_succeeded', 'authorization_void_pending', 'authorization_voided'];

const TONE = (s: string): 'ok' | 'bad' | 'warn' | 'info' => (/succeeded|voided/.test(s) ? 'ok' : /failed|declined/.test(s) ? 'bad' : /pending|processing/.test(s) ? 'warn' : 'info');

/** Amounts are in minor units: 1234 EUR is 12.34. */
export function money(amount: number, currency: string): string {
  try {
    const digits = new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(amount / 10 ** digits);
  } catch {
    return `${amount} ${currency}`;
  }
}

export function TransactionsRoutes(props: { parts: string[] }) {
  const [id] = props.parts;
  return id ? <TransactionDetail id={id} /> : <TransactionList />;
}

/** Read views of orchestration (docs/orchestration.md): transactions, filtered, newest first. */
function TransactionList() {
  const [draft, setDraft] = useState({ status: '', external_identifier: '', amount_gte: '', amount_lte: '', from: '', to: '' });
  const [filters, setFilters] = useState(draft);
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const { data, error, loading } = useLoad(() => api.get<Page<Transaction>>('orchestration/transactions', {
    limit: 20, cursor, status: filters.status ? [filters.status] : undefined, external_identifier: filters.external_identifier,
    amount_gte: filters.amount_gte, amount_lte: filters.amount_lte, created_at_gte: isoOf(filters.from), created_at_lte: isoOf(filters.to),
  }), [filters, cursor]);
  const errors = fieldErrorsOf(error);
  return (
    <section>
      <PageHeader title="Transactions" />
      <form class="filters" role="search" onSubmit={(e) => { e.preventDefault(); setCursors([]); setFilters(draft); }}>
        <FormField label="Status" path="query.status" errors={errors} id="tx-status">
          <select id="tx-status" value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}>
            <option value="">Any</option>
            {TRANSACTION_STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </FormField>
        <DraftInput label="External identifier" path="query.external_identifier" errors={errors} id="tx-ext" draft={draft} name="external_identifier" setDraft={setDraft} />
        <DraftInput label="Min amount (minor units)" path="query.amount_gte" errors={errors} id="tx-gte" inputMode="numeric" draft={draft} name="amount_gte" setDraft={setDraft} />
        <DraftInput label="Max amount" path="query.amount_lte" errors={errors} id="tx-lte" inputMode="numeric" draft={draft} name="amount_lte" setDraft={setDraft} />
        <DraftInput label="Created from" path="query.created_at_gte" errors={errors} id="tx-from" type="datetime-local" draft={draft} name="from" setDraft={setDraft} />
        <DraftInput label="Created until" path="query.created_at_lte" errors={errors} id="tx-to" type="datetime-local" draft={draft} name="to" setDraft={setDraft} />
        <button type="submit">Filter</button>
      </form>
      <FieldMessages errors={errors} except={['query.status', 'query.external_identifier', 'query.amount_gte', 'query.amount_lte', 'query.created_at_gte', 'query.created_at_lte']} />
      {Object.keys(errors).length === 0 && <ProblemBanner error={error} />}
      <ListTable
        data={data}
        loading={loading}
        head={['Created', 'Amount', 'Status', 'Card', 'External ID']}
        empty={
          <EmptyState title="No transactions">Transactions appear here once your back end creates them (POST /orchestration/transactions, with a connection to a processor).</EmptyState>
        }
        row={(t) => (
          <>
            <td><a href={href('transactions', t.id)}><When at={t.created_at} /></a></td>
            <td>{money(t.amount, t.currency)}</td>
            <td><Badge tone={TONE(t.status)}>{t.status}</Badge></td>
            <td>{t.payment_method.scheme ?? 'card'} ···· {t.payment_method.last4}</td>
            <td>{t.external_identifier ?? '—'}</td>
          </>
        )}
        pager={
          <nav class="pager" aria-label="Pages">
            {cursors.length > 0 && <button type="button" class="secondary" onClick={() => setCursors([])}>First page</button>}
            {data?.pagination.next_cursor && <button type="button" onClick={() => setCursors([...cursors, data.pagination.next_cursor!])}>Next</button>}
          </nav>
        }
      />
    </section>
  );
}

function TransactionDetail(props: { id: string }) {
  const can = useCan();
  const path = `orchestration/transactions/${encodeURIComponent(props.id)}`;
  const { data: t, error } = useLoad(() => api.get<Transaction>(path), [props.id]);
  // Refunds are read with token:use (the API's choice): shown when the role holds it.
  const refunds = useLoad(() => (can('token:use') ? api.get<Page<Refund>>(`${path}/refunds`, { limit: 100 }) : Promise.resolve(undefined)), [props.id]);
  if (error) return <ProblemBanner error={error} />;
  if (!t) return <Loading />;
  return (
    <section>
      <PageHeader title={`Transaction ${money(t.amount, t.currency)}`} back={{ href: href('transactions'), label: 'Transactions' }} />
      <Facts rows={[
        ['ID', <code>{t.id}</code>],
        ['Status', <Badge tone={TONE(t.status)}>{t.status}</Badge>],
        ['Intent', t.intent],
        ['Authorized', money(t.authorized_amount, t.currency)],
        ['Captured', money(t.captured_amount, t.currency)],
        ['Refunded', money(t.refunded_amount, t.currency)],
        ['Card', `${t.payment_method.scheme ?? 'card'} ···· ${t.payment_method.last4}${t.payment_method.expiration_date ? ` (${t.payment_method.expiration_date})` : ''}`],
        ['Token', t.payment_method.token ? <a href={href('tokens', t.payment_method.token)}><code>{t.payment_method.token}</code></a> : undefined],
        ['Source', t.payment_source],
        ['External ID', t.external_identifier],
        ['Created', <When at={t.created_at} />],
      ]} />
      <h2>Refunds</h2>
      <ProblemBanner error={refunds.error} />
      {!can('token:use') && <p class="muted">Reading refunds needs the token:use permission.</p>}
      {refunds.data && refunds.data.data.length === 0 && <p class="muted">No refunds.</p>}
      {refunds.data && refunds.data.data.length > 0 && (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Created</th><th>Amount</th><th>Status</th><th>Reason</th><th>Error</th></tr></thead>
            <tbody>
              {refunds.data.data.map((r) => (
                <tr key={r.id}>
                  <td><When at={r.created_at} /></td>
                  <td>{money(r.amount, r.currency)}</td>
                  <td><Badge tone={TONE(r.status)}>{r.status}</Badge></td>
                  <td>{r.reason ?? '—'}</td>
                  <td>{r.error_code ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <details>
        <summary>The whole transaction (JSON)</summary>
        <Json value={t} />
      </details>
    </section>
  );
}
