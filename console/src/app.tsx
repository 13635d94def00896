import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiProblem, csrfToken, setUnauthorizedHandler } from './api.ts';
import { Loading } from './components/bits.tsx';
import { ProblemBanner } from './components/problem.tsx';
import { SECTIONS } from './nav.ts';
import { href, useRoute, type Route } from './router.ts';
import { SessionContext, type Me } from './session.tsx';
import { SigninPage } from './pages/signin.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { ApplicationsRoutes } from './pages/applications/routes.tsx';
import { TokensRoutes } from './pages/tokens/routes.tsx';
import { ReactorsRoutes } from './pages/reactors/routes.tsx';
import { ProxiesRoutes } from './pages/proxies/routes.tsx';
import { WebhooksRoutes } from './pages/webhooks/routes.tsx';
import { LogsPage } from './pages/logs.tsx';
import { MembersPage } from './pages/members.tsx';
import { TransactionsRoutes } from './pages/payments/transactions.tsx';
import { LookupPage } from './pages/payments/lookup.tsx';

/** Which page a route shows. Each section owns the parts after its first (`applications/<id>`). */
function Page(props: { route: Route }) {
  const [section, ...rest] = props.route.parts;
  switch (section ?? '') {
    case '': return <OverviewPage />;
    case 'applications': return <ApplicationsRoutes parts={rest} />;
    case 'tokens': return <TokensRoutes parts={rest} query={props.route.query} />;
    case 'reactors': return <ReactorsRoutes parts={rest} />;
    case 'proxies': return <ProxiesRoutes parts={rest} />;
    case 'webhooks': return <WebhooksRoutes parts={rest} />;
    case 'transactions': return <TransactionsRoutes parts={rest} />;
    case 'lookup': return <LookupPage query={props.route.query} />;
    case 'logs': return <LogsPage query={props.route.query} />;
    case 'members': return <MembersPage />;
    default: return <p>No such page. <a href={href()}>Go to the overview</a>.</p>;
  }
}

export function App() {
  const [me, setMe] = useState<Me | undefined>();
  const [state, setState] = useState<'loading' | 'signed-out' | 'ready' | 'error'>('loading');
  const [error, setError] = useState<unknown>();
  const load = () =>
    api.get<Me>('me').then(
      (m) => { setMe(m); setState('ready'); },
      (e) => {
        if (e instanceof ApiProblem && e.status === 401) setState('signed-out');
        else { setError(e); setState('error'); }
      },
    );
  useEffect(() => {
    setUnauthorizedHandler(() => { setMe(undefined); setState('signed-out'); });
    // Without the CSRF cookie there is no session: no need to ask (and be answered 401).
    if (csrfToken()) void load();
    else setState('signed-out');
    return () => setUnauthorizedHandler(undefined);
  }, []);
  if (state === 'loading') return <main class="signin"><Loading /></main>;
  if (state === 'signed-out') return <SigninPage />;
  if (state === 'error' || !me) return <main class="signin"><ProblemBanner error={error} /></main>;
  return (
    <SessionContext.Provider value={me}>
      <Layout me={me} onMe={setMe} onSignedOut={() => { setMe(undefined); setState('signed-out'); }} />
    </SessionContext.Provider>
  );
}

function Layout(props: { me: Me; onMe: (m: Me) => void; onSignedOut: () => void }) {
  const { me } = props;
  const route = useRoute();
  const [navOpen, setNavOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const [switchError, setSwitchError] = useState<unknown>();
  // A new page closes the menu (on a phone it covers the page) and takes the focus, so that a
  // keyboard or screen reader user starts at the page, not at the link they followed.
  const first = useRef(true);
  useEffect(() => {
    setNavOpen(false);
    if (first.current) first.current = false;
    else document.getElementById('main')?.focus();
  }, [route.parts.join('/')]);
  const current = route.parts[0] ?? '';
  const tenant = me.tenants.find((t) => t.id === me.tenant_id);
  const switchTenant = async (tenantId: string) => {
    setSwitchError(undefined);
    try {
      props.onMe(await api.post<Me>('me/tenant', { tenant_id: tenantId }));
      window.location.hash = '#/';
    } catch (e) {
      setSwitchError(e);
    }
  };
  return (
    <div class="shell">
      <header class="topbar">
        <button type="button" ref={menuButton} class="menu-button" aria-expanded={navOpen} aria-controls="nav" onClick={() => setNavOpen(!navOpen)}>
          <span class="menu-icon" aria-hidden="true" />Menu
        </button>
        <a class="brand" href={href()}>Coffer</a>
        {me.tenants.length > 1 ? (
          <label class="tenant-switch">
            <span class="sr-only">Tenant</span>
            <select value={me.tenant_id} onChange={(e) => void switchTenant(e.currentTarget.value)}>
              {me.tenants.map((t) => <option key={t.id} value={t.id}>{t.name} ({t.role})</option>)}
            </select>
          </label>
        ) : (
          <span class="tenant-name">{tenant?.name ?? 'Tenant'}</span>
        )}
        <span class="spacer" />
        <span class="who" title={me.user.email}>{me.user.email} · <span class="role">{me.role}</span></span>
        <button type="button" class="secondary" onClick={async () => { await api.post('signout').catch(() => undefined); props.onSignedOut(); }}>Sign out</button>
      </header>
      <nav id="nav" class={navOpen ? 'nav open' : 'nav'} aria-label="Sections" onKeyDown={(e) => { if (e.key === 'Escape' && navOpen) { setNavOpen(false); menuButton.current?.focus(); } }}>
        <ul>
          {SECTIONS.filter((s) => !s.permission || me.permissions.includes(s.permission)).map((s) => (
            <li key={s.path}>
              <a href={href(s.path)} aria-current={current === s.path ? 'page' : undefined}>{s.label}</a>
            </li>
          ))}
        </ul>
      </nav>
      <main class="content" id="main" tabIndex={-1}>
        <ProblemBanner error={switchError} />
        {/* A tenant switch remounts the page: nothing loaded for the other tenant stays. */}
        <Page key={me.tenant_id} route={route} />
      </main>
    </div>
  );
}
