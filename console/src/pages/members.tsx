import { useState } from 'preact/hooks';
import { api, type OffsetPage } from '../api.ts';
import { Badge, confirmed, EmptyState, Loading, PageHeader, When } from '../components/bits.tsx';
import { FieldMessages, FormField } from '../components/form-field.tsx';
import { OffsetPager } from '../components/pager.tsx';
import { ProblemBanner } from '../components/problem.tsx';
import { useLoad, useSubmit } from '../hooks.ts';
import { useCan, useMe } from '../session.tsx';

type Member = { id: string; role: string; user: { id: string; email?: string; first_name?: string; last_name?: string }; created_at: string };
type Invitation = { id: string; email: string; role: string; status: string; expires_at: string; email_status: string; accepted_at?: string; created_at: string };

const STATUS_TONE: Record<string, 'ok' | 'warn' | 'bad' | 'info'> = { ACCEPTED: 'ok', PENDING: 'info', EXPIRED: 'warn' };

/** Members (remove) and invitations (invite with a role, resend, delete): docs/people.md. */
export function MembersPage() {
  const can = useCan();
  const me = useMe();
  const [mPage, setMPage] = useState(1);
  const [iPage, setIPage] = useState(1);
  const members = useLoad(() => api.get<OffsetPage<Member>>('tenants/self/members', { page: mPage, size: 50 }), [mPage]);
  const invitations = useLoad(
    () => (can('tenant:invitation:read') ? api.get<OffsetPage<Invitation>>('tenants/self/invitations', { page: iPage, size: 20 }) : Promise.resolve(undefined)),
    [iPage],
  );
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('ADMIN');
  const [sent, setSent] = useState<string | undefined>();
  const invite = useSubmit(async () => {
    await api.post('tenants/self/invitations', { email, role });
    setSent(email);
    setEmail('');
    invitations.reload();
  });
  const action = useSubmit(async (fn: () => Promise<unknown>) => fn());
  return (
    <section>
      <PageHeader title="Members" />
      <ProblemBanner error={members.error ?? action.error} />
      {members.loading && !members.data && <Loading />}
      {members.data && (
        <div class="table-wrap">
          <table>
            <thead><tr><th>Name</th><th>E-mail</th><th>Role</th><th>Since</th><th><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {members.data.data.map((m) => (
                <tr key={m.id}>
                  <td>{[m.user.first_name, m.user.last_name].filter(Boolean).join(' ') || '—'}{m.id === me.member_id && <span class="muted"> (you)</span>}</td>
                  <td>{m.user.email}</td>
                  <td><Badge>{m.role}</Badge></td>
                  <td><When at={m.created_at} /></td>
                  <td>
                    {can('tenant:member:delete') && m.role !== 'OWNER' && m.id !== me.member_id && (
                      <button type="button" class="link danger" onClick={() => confirmed(`Remove ${m.user.email} from the tenant? Their sessions end at once.`) && void action.submit(async () => { await api.del(`tenants/self/members/${m.id}`); members.reload(); })}>Remove</button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <OffsetPager page={members.data?.pagination} onPage={setMPage} />

      {can('tenant:invitation:create') && (
        <form class="form" noValidate onSubmit={(e) => { e.preventDefault(); setSent(undefined); void invite.submit(); }}>
          <h2>Invite someone</h2>
          <ProblemBanner error={Object.keys(invite.fieldErrors).length ? undefined : invite.error} />
          {sent && <p class="notice" role="status">Invitation sent to {sent}.</p>}
          <div class="grid-2">
            <FormField label="E-mail address" path="body.email" errors={invite.fieldErrors} id="invite-email">
              <input id="invite-email" type="email" value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </FormField>
            <FormField label="Role" path="body.role" errors={invite.fieldErrors} id="invite-role" hint="READ_ONLY sees everything and changes nothing">
              <select id="invite-role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
                <option value="ADMIN">ADMIN</option>
                <option value="READ_ONLY">READ_ONLY</option>
              </select>
            </FormField>
          </div>
          <FieldMessages errors={invite.fieldErrors} except={['body.email', 'body.role']} />
          <button type="submit" disabled={invite.busy}>{invite.busy ? 'Inviting…' : 'Send invitation'}</button>
        </form>
      )}

      {can('tenant:invitation:read') && (
        <>
          <h2>Invitations</h2>
          <ProblemBanner error={invitations.error} />
          {invitations.data && invitations.data.data.length === 0 && (
            <EmptyState title="No invitations yet">{can('tenant:invitation:create') && <p>Invite a colleague above: they get an e-mail with a link to join.</p>}</EmptyState>
          )}
          {invitations.data && invitations.data.data.length > 0 && (
            <div class="table-wrap">
              <table>
                <thead><tr><th>E-mail</th><th>Role</th><th>Status</th><th>E-mail sent</th><th>Expires</th><th><span class="sr-only">Actions</span></th></tr></thead>
                <tbody>
                  {invitations.data.data.map((i) => (
                    <tr key={i.id}>
                      <td>{i.email}</td>
                      <td>{i.role}</td>
                      <td><Badge tone={STATUS_TONE[i.status]}>{i.status}</Badge></td>
                      <td>{i.email_status}</td>
                      <td>{i.status === 'ACCEPTED' ? <When at={i.accepted_at} /> : <When at={i.expires_at} />}</td>
                      <td class="row-actions">
                        {i.status !== 'ACCEPTED' && can('tenant:invitation:create') && can('tenant:invitation:update') && (
                          <button type="button" class="link" onClick={() => void action.submit(async () => { await api.post(`tenants/self/invitations/${i.id}/resend`); invitations.reload(); })}>Resend</button>
                        )}
                        {' '}
                        {can('tenant:invitation:delete') && (
                          <button type="button" class="link danger" onClick={() => confirmed(`Delete the invitation to ${i.email}? Its link stops working.`) && void action.submit(async () => { await api.del(`tenants/self/invitations/${i.id}`); invitations.reload(); })}>Delete</button>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <OffsetPager page={invitations.data?.pagination} onPage={setIPage} />
        </>
      )}
    </section>
  );
}
