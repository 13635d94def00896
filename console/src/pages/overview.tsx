import { api, type OffsetPage } from '../api.ts';
import { EmptyState } from '../components/bits.tsx';
import { useLoad } from '../hooks.ts';
import { href } from '../router.ts';
import { useCan, useMe } from '../session.tsx';

/** Where a new member starts: who they are, and the first steps, each a link. */
export function OverviewPage() {
  const me = useMe();
  const can = useCan();
  const apps = useLoad(() => (can('application:read') ? api.get<OffsetPage<unknown>>('applications', { size: 1 }) : Promise.resolve(undefined)), []);
  const tenant = me.tenants.find((t) => t.id === me.tenant_id);
  const name = [me.user.first_name, me.user.last_name].filter(Boolean).join(' ') || me.user.email;
  return (
    <section>
      <h1>Welcome, {name}</h1>
      <p>You are signed in to <strong>{tenant?.name}</strong> as <strong>{me.role}</strong>{me.role === 'READ_ONLY' ? ': you can look at everything, and change nothing.' : '.'}</p>
      {apps.data && apps.data.pagination.total_items <= 1 && can('application:create') && (
        <EmptyState title="Start here">
          <ol>
            <li><a href={href('applications', 'new')}>Create an application</a> and its key, for your servers to call Coffer.</li>
            <li><a href={href('tokens', 'new')}>Create a token</a> to see how data is stored and masked.</li>
            <li><a href={href('reactors', 'new')}>Write a reactor</a> or <a href={href('proxies', 'new')}>set up a proxy</a>.</li>
            <li><a href={href('members')}>Invite your colleagues</a>.</li>
          </ol>
        </EmptyState>
      )}
      <div class="cards">
        {can('application:read') && <a class="card" href={href('applications')}><strong>Applications</strong><span>Keys and what they may do</span></a>}
        {can('token:search') && <a class="card" href={href('tokens')}><strong>Tokens</strong><span>Search the vault</span></a>}
        {can('reactor:read') && <a class="card" href={href('reactors')}><strong>Reactors</strong><span>Your code, run next to the data</span></a>}
        {can('proxy:read') && <a class="card" href={href('proxies')}><strong>Proxies</strong><span>Forward requests with detokenization</span></a>}
        {can('webhook:read') && <a class="card" href={href('webhooks')}><strong>Webhooks</strong><span>Events sent to your endpoints</span></a>}
        {can('log:read') && <a class="card" href={href('logs')}><strong>Logs</strong><span>Who did what, when</span></a>}
        {can('tenant:member:read') && <a class="card" href={href('members')}><strong>Members</strong><span>People and invitations</span></a>}
      </div>
    </section>
  );
}
