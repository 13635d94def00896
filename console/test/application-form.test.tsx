import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, screen, waitFor } from '@testing-library/preact';
import { ApplicationCreate } from '../src/pages/applications/create.tsx';
import { json, problem, stubFetch } from './helpers.tsx';

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
});

describe('the application form shows the API\'s messages on the fields they name', () => {
  it('puts body.name under Name and body.permissions[0] under Permissions', async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    vi.stubGlobal('fetch', vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      if (url.includes('/permissions')) return json([{ type: 'token:create', description: 'Create tokens', application_types: ['private'] }]);
      return problem(400, 'The request is invalid.', { 'body.name': ['must NOT have fewer than 1 characters'], 'body.permissions[0]': ['"x" is not a known permission'] });
    }));
    document.cookie = 'coffer_csrf=csrf-value';
    render(<ApplicationCreate />);
    await screen.findByLabelText(/token:create/);
    fireEvent.click(screen.getByRole('button', { name: 'Create application' }));
    const nameField = screen.getByLabelText('Name').closest('.field')!;
    await waitFor(() => expect(nameField.textContent).toContain('must NOT have fewer than 1 characters'));
    expect(nameField.classList.contains('field-invalid')).toBe(true);
    const perms = screen.getByText('Permissions', { selector: 'legend' }).closest('fieldset')!;
    expect(perms.textContent).toContain('is not a known permission');
    const post = calls.find((c) => c.init.method === 'POST')!;
    expect((post.init.headers as Record<string, string>)['x-csrf-token']).toBe('csrf-value');
    expect(JSON.parse(post.init.body as string)).toMatchObject({ name: '', type: 'private', create_key: true });
  });

  it('shows the key once, with a copy button, after creating', async () => {
    vi.stubGlobal('fetch', vi.fn(async (url: string) => {
      if (url.includes('/permissions')) return json([]);
      return json({ id: 'a1', name: 'Back end', type: 'private', key: 'key_secret_value', keys: [], permissions: [], rules: [], tenant_id: 't', created_at: new Date().toISOString() }, 201);
    }));
    render(<ApplicationCreate />);
    fireEvent.input(screen.getByLabelText('Name'), { target: { value: 'Back end' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create application' }));
    expect(await screen.findByText('key_secret_value')).toBeTruthy();
    expect(screen.getByRole('button', { name: 'Copy' })).toBeTruthy();
  });
});

describe('the access rules editor', () => {
  it('puts body.rules[0].priority under rule 1\'s Priority, and a rule-level message at the end with its path', async () => {
    stubFetch((url) => (url.includes('/permissions')
      ? json([{ type: 'token:read', description: 'Read tokens', application_types: ['private'] }])
      : problem(400, 'The request is invalid.', { 'body.rules[0].priority': ['must be >= 1'], 'body.rules[0]': ['must NOT have additional properties'] })));
    render(<ApplicationCreate />);
    fireEvent.input(screen.getByLabelText('Name'), { target: { value: 'Back end' } });
    fireEvent.click(screen.getByRole('button', { name: 'Add a rule' }));
    fireEvent.input(screen.getByLabelText('Priority'), { target: { value: '0' } });
    fireEvent.click(screen.getByRole('button', { name: 'Create application' }));
    await waitFor(() => expect(screen.getByLabelText('Priority').closest('.field')!.textContent).toContain('must be >= 1'));
    const leftover = screen.getByText('body.rules[0]', { selector: 'code' }).closest('li')!;
    expect(leftover.textContent).toContain('must NOT have additional properties');
  });
});
