import { useState } from 'preact/hooks';
import { api } from '../../api.ts';
import { Badge, confirmed, Facts, Json, Loading, PageHeader, When } from '../../components/bits.tsx';
import { ProblemBanner } from '../../components/problem.tsx';
import { useLoad, useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { canReveal, useCan, useMe } from '../../session.tsx';
import type { Token } from './types.ts';

/**
 * A token, its data masked as every member sees it. "Reveal" (OWNER, ADMIN) asks
 * GET /tokens/{id}?reveal=true for the plaintext: an explicit act, written to the audit log.
 */
export function TokenDetail(props: { id: string }) {
  const me = useMe();
  const can = useCan();
  const path = `tokens/${encodeURIComponent(props.id)}`;
  const { data: token, error } = useLoad(() => api.get<Token>(path), [props.id]);
  const [revealed, setRevealed] = useState<Token | undefined>();
  const reveal = useSubmit(async () => setRevealed(await api.get<Token>(path, { reveal: true })));
  const remove = useSubmit(async () => {
    await api.del(path);
    navigate(href('tokens'));
  });
  if (error) return <ProblemBanner error={error} />;
  if (!token) return <Loading />;
  return (
    <section>
      <PageHeader title={`Token ${token.id}`} back={{ href: href('tokens'), label: 'Tokens' }}>
        {canReveal(me) && !revealed && <button type="button" onClick={() => void reveal.submit()} disabled={reveal.busy}>Reveal data</button>}
        {revealed && <button type="button" class="secondary" onClick={() => setRevealed(undefined)}>Hide data</button>}
        {can('token:delete') && <button type="button" class="danger" onClick={() => confirmed('Delete this token? Its data is gone for good.') && void remove.submit()}>Delete</button>}
      </PageHeader>
      <ProblemBanner error={reveal.error ?? remove.error} />
      <h2>{revealed ? 'Data (revealed)' : 'Data (masked)'}</h2>
      {revealed && <p class="notice">This is the plaintext. Revealing it was written to the audit log under your name.</p>}
      <div data-testid="token-data">
        {(revealed ?? token).data === undefined ? <p class="muted">This token has no mask: its data is not shown.</p> : <Json value={(revealed ?? token).data} />}
      </div>
      <Facts rows={[
        ['Type', <Badge>{token.type}</Badge>],
        ['Containers', token.containers.join(', ')],
        ['Card', token.card ? `${token.card.brand} ${token.card.bin}…${token.card.last4}` : undefined],
        ['Fingerprint', token.fingerprint ? <code>{token.fingerprint}</code> : undefined],
        ['Metadata', token.metadata && Object.keys(token.metadata).length ? <Json value={token.metadata} /> : undefined],
        ['Mask', token.mask !== undefined ? <code>{JSON.stringify(token.mask)}</code> : undefined],
        ['Expires', <When at={token.expires_at} />],
        ['Created', <When at={token.created_at} />],
        ['Modified', <When at={token.modified_at} />],
      ]} />
      <p><a href={`${href('logs')}?entity_type=token&entity_id=${encodeURIComponent(token.id)}`}>This token's audit log</a></p>
    </section>
  );
}
