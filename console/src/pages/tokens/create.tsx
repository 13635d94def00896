import { useState } from 'preact/hooks';
import { api, type FieldErrors } from '../../api.ts';
import { PageHeader } from '../../components/bits.tsx';
import { FieldMessages, FormField } from '../../components/form-field.tsx';
import { parseJsonField } from '../../components/json-input.ts';
import { ProblemBanner } from '../../components/problem.tsx';
import { useSubmit } from '../../hooks.ts';
import { href, navigate } from '../../router.ts';
import { TOKEN_TYPES, type Token } from './types.ts';

/** POST /tokens: a type, its data as JSON, containers and a mask (both optional: the type's defaults). */
export function TokenCreate() {
  const [type, setType] = useState('token');
  const [id, setId] = useState('');
  const [data, setData] = useState(TOKEN_TYPES[0].sample);
  const [containers, setContainers] = useState('');
  const [mask, setMask] = useState('');
  const [metadata, setMetadata] = useState('');
  const [local, setLocal] = useState<FieldErrors>({});
  const { submit, busy, error, fieldErrors } = useSubmit(async (body: Record<string, unknown>) => {
    const t = await api.post<Token>('tokens', body);
    navigate(href('tokens', t.id));
  });
  const errors = { ...fieldErrors, ...local };
  const onSubmit = (e: Event) => {
    e.preventDefault();
    const bad: FieldErrors = {};
    const parse = (path: string, text: string, what: string) => {
      try {
        return parseJsonField(text, what);
      } catch (err) {
        bad[path] = [(err as Error).message];
        return undefined;
      }
    };
    const body: Record<string, unknown> = { type, data: parse('body.data', data, 'The data') };
    if (id.trim()) body.id = id.trim();
    const list = containers.split(',').map((c) => c.trim()).filter(Boolean);
    if (list.length) body.containers = list;
    const m = parse('body.mask', mask, 'The mask');
    if (m !== undefined) body.mask = m;
    const md = parse('body.metadata', metadata, 'The metadata');
    if (md !== undefined) body.metadata = md;
    setLocal(bad);
    if (Object.keys(bad).length === 0) void submit(body);
  };
  const shown = ['body.type', 'body.id', 'body.data', 'body.containers', 'body.mask', 'body.metadata'];
  return (
    <section>
      <PageHeader title="New token" back={{ href: href('tokens'), label: 'Tokens' }} />
      <form class="form" onSubmit={onSubmit} noValidate>
        <ProblemBanner error={error} />
        <div class="grid-2">
          <FormField label="Type" path="body.type" errors={errors} id="token-type">
            <select id="token-type" value={type} onChange={(e) => { const t = e.currentTarget.value; setType(t); setData(TOKEN_TYPES.find((x) => x.name === t)?.sample ?? ''); }}>
              {TOKEN_TYPES.map((t) => <option key={t.name} value={t.name}>{t.name}</option>)}
            </select>
          </FormField>
          <FormField label="ID (optional)" path="body.id" errors={errors} id="token-id" hint="Letters, digits, _ - . ; a UUID is made otherwise">
            <input id="token-id" value={id} onInput={(e) => setId(e.currentTarget.value)} />
          </FormField>
        </div>
        <FormField label="Data (JSON)" path="body.data" errors={errors} id="token-data" hint="A string type takes a JSON string, in quotes">
          <textarea id="token-data" value={data} onInput={(e) => setData(e.currentTarget.value)} spellcheck={false} />
        </FormField>
        <FormField label="Containers (optional)" path="body.containers" errors={errors} id="token-containers" hint="Comma-separated, e.g. /pci/high/; the type's default otherwise">
          <input id="token-containers" value={containers} onInput={(e) => setContainers(e.currentTarget.value)} />
        </FormField>
        <FormField label="Mask (optional, JSON)" path="body.mask" errors={errors} id="token-mask" hint={<>An expression like <code>"{'{{ data | reveal_last: 4 }}'}"</code>, or an object mirroring the data</>}>
          <textarea id="token-mask" class="short" value={mask} onInput={(e) => setMask(e.currentTarget.value)} spellcheck={false} />
        </FormField>
        <FormField label="Metadata (optional, JSON object of strings)" path="body.metadata" errors={errors} id="token-metadata">
          <textarea id="token-metadata" class="short" value={metadata} onInput={(e) => setMetadata(e.currentTarget.value)} spellcheck={false} />
        </FormField>
        <FieldMessages errors={errors} except={shown} />
        <div class="row"><button type="submit" disabled={busy}>{busy ? 'Creating…' : 'Create token'}</button></div>
      </form>
    </section>
  );
}
