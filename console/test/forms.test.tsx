import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { MembersPage } from '../src/pages/members.tsx';
import { TokenCreate } from '../src/pages/tokens/create.tsx';
import { TokenDetail } from '../src/pages/tokens/detail.tsx';
import { RunPanel } from '../src/pages/reactors/run-panel.tsx';
import { SigninPage } from '../src/pages/signin.tsx';
import { AsMember, json, problem, stubFetch } from './helpers.tsx';

const page = (data: unknown[] = []) => ({ pagination: { total_items: data.length, page_number: 1, page_size: 20, total_pages: 1 }, data });
const fieldOf = (label: string | RegExp) => screen.getByLabelText(label).closest('.field')!;

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('forms show the API\'s messages where they belong', () => {
  it('sign-in: body.email under the e-mail field', async () => {
    stubFetch(() => problem(400, 'is not an e-mail address', { 'body.email': ['is not an e-mail address'] }));
    render(<SigninPage />);
    fireEvent.input(screen.getByLabelText('E-mail address'), { target: { value: 'nobody' } });
    fireEvent.click(screen.getByRole('button', { name: 'E-mail me a sign-in link' }));
    await waitFor(() => expect(fieldOf('E-mail address').textContent).toContain('is not an e-mail address'));
    expect(fieldOf('E-mail address').classList.contains('field-invalid')).toBe(true);
  });

  it('sign-in: a 202 says to check the e-mail', async () => {
    const calls = stubFetch(() => json({ message: 'ok' }, 202));
    render(<SigninPage />);
    fireEvent.input(screen.getByLabelText('E-mail address'), { target: { value: 'ada@example.com' } });
    fireEvent.click(screen.getByRole('button', { name: 'E-mail me a sign-in link' }));
    expect(await screen.findByRole('heading', { name: 'Check your e-mail' })).toBeTruthy();
    expect(calls[0]).toMatchObject({ method: 'POST', body: { email: 'ada@example.com' } });
    expect(calls[0].url).toMatch(/\/signin$/);
  });

  it('invitation: body.email under the e-mail field, a 409 at the top of the form', async () => {
    let answer = problem(400, 'The request is invalid.', { 'body.email': ['must be one e-mail address'] });
    stubFetch((url, method) => (method === 'POST' ? answer : json(page())));
    render(<AsMember><MembersPage /></AsMember>);
    fireEvent.input(await screen.findByLabelText('E-mail address'), { target: { value: 'x' } });
    fireEvent.click(screen.getByRole('button', { name: 'Send invitation' }));
    await waitFor(() => expect(fieldOf('E-mail address').textContent).toContain('must be one e-mail address'));
    answer = problem(409, 'This address has a pending invitation.', undefined, 'Conflict');
    fireEvent.click(screen.getByRole('button', { name: 'Send invitation' }));
    expect(await screen.findByText(/This address has a pending invitation/)).toBeTruthy();
    expect(fieldOf('E-mail address').textContent).not.toContain('must be one e-mail address');
  });

  it('members: READ_ONLY gets no invitation form and no Remove button', async () => {
    stubFetch((url) => json(url.includes('members')
      ? page([{ id: 'm2', role: 'ADMIN', user: { id: 'u2', email: 'b@example.com' }, created_at: new Date().toISOString() }])
      : page()));
    render(<AsMember role="READ_ONLY"><MembersPage /></AsMember>);
    expect(await screen.findByText('b@example.com')).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Send invitation' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Remove' })).toBeNull();
  });

  it('token: data that is not JSON is refused on its field before any request; body.data from the API lands there too', async () => {
    const calls = stubFetch(() => problem(400, 'The request is invalid.', { 'body.data': ['is not a valid card number'] }));
    render(<AsMember><TokenCreate /></AsMember>);
    fireEvent.input(screen.getByLabelText('Data (JSON)'), { target: { value: '{not json' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create token' }));
    await waitFor(() => expect(fieldOf('Data (JSON)').textContent).toContain('is not valid JSON'));
    expect(calls).toHaveLength(0);
    fireEvent.input(screen.getByLabelText('Data (JSON)'), { target: { value: '"4111"' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create token' }));
    await waitFor(() => expect(fieldOf('Data (JSON)').textContent).toContain('is not a valid card number'));
    expect(calls[0].body).toEqual({ type: 'token', data: '4111' });
  });

  it('token: masked by default; Reveal only for ADMIN, and asks with reveal=true', async () => {
    const token = { id: 'tok1', type: 'card_number', tenant_id: 't1', data: '411111XXXXXX1111', containers: ['/pci/high/'], deduplicate_token: false, created_at: new Date().toISOString() };
    const calls = stubFetch((url) => json(url.includes('reveal=true') ? { ...token, data: '4111111111111111' } : token));
    const { unmount } = render(<AsMember role="READ_ONLY"><TokenDetail id="tok1" /></AsMember>);
    expect(await screen.findByText(/411111XXXXXX1111/)).toBeTruthy();
    expect(screen.queryByRole('button', { name: 'Reveal data' })).toBeNull();
    unmount();
    render(<AsMember role="ADMIN"><TokenDetail id="tok1" /></AsMember>);
    fireEvent.click(await screen.findByRole('button', { name: 'Reveal data' }));
    expect(await screen.findByText(/4111111111111111/)).toBeTruthy();
    expect(calls.at(-1)!.url).toMatch(/\/tokens\/tok1\?reveal=true$/);
  });

  it('reactor run: the run\'s problem shows with its status and detail', async () => {
    stubFetch(() => new Response(JSON.stringify({ type: 'about:blank', title: 'Unprocessable Content', status: 422, detail: 'Error: no card', data: { field: 'card' }, console: ['looking for a card'], request_id: 'r' }), { status: 422, headers: { 'content-type': 'application/problem+json' } }));
    render(<AsMember><RunPanel reactorId="r1" /></AsMember>);
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    const result = await screen.findByTestId('run-result');
    expect(result.textContent).toContain('Error: 422');
    expect(result.textContent).toContain('Error: no card');
    expect(result.textContent).toContain('"field": "card"');
    expect(screen.getByTestId('run-console').textContent).toBe('looking for a card');
  });

  it('reactor run: the result, and the lines the code printed apart from it', async () => {
    stubFetch(() => json({ raw: { ok: true }, console: ['one', '[warn] two'] }));
    render(<AsMember><RunPanel reactorId="r1" /></AsMember>);
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    const result = await screen.findByTestId('run-result');
    expect(result.textContent).toContain('Result: 200');
    expect(result.querySelector('pre.json')!.textContent).not.toContain('[warn] two');
    expect(screen.getByTestId('run-console').textContent).toBe('one\n[warn] two');
  });

  it('reactor run: args that are not JSON stay in the browser, with the message on the args field', async () => {
    const calls = stubFetch(() => json({ raw: {} }));
    render(<AsMember><RunPanel reactorId="r1" /></AsMember>);
    fireEvent.input(screen.getByLabelText('args (JSON)'), { target: { value: '{' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    await waitFor(() => expect(fieldOf('args (JSON)').textContent).toContain('is not valid JSON'));
    expect(calls).toHaveLength(0);
  });
});
