import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiProblem, apiBase, errorsUnder, queryString, request } from '../src/api.ts';
import { parseHash } from '../src/router.ts';
import { problem, stubFetch } from './helpers.tsx';

afterEach(() => vi.unstubAllGlobals());

describe('api.ts', () => {
  it('finds Coffer at the parent of /console/, behind a path prefix too', () => {
    expect(apiBase({ origin: 'https://c.example', pathname: '/console/' })).toBe('https://c.example/');
    expect(apiBase({ origin: 'https://c.example', pathname: '/vault/console/' })).toBe('https://c.example/vault/');
    expect(apiBase({ origin: 'https://c.example', pathname: '/vault/console/index.html' })).toBe('https://c.example/vault/');
  });

  it('repeats array parameters and leaves empty ones out', () => {
    expect(queryString({ id: ['a', 'b'], name: '', size: 20, start: undefined })).toBe('?id=a&id=b&size=20');
  });

  it('sends X-CSRF-Token from the coffer_csrf cookie, and turns problem+json into an ApiProblem with field errors', async () => {
    document.cookie = 'coffer_csrf=abc.def';
    const calls = stubFetch(() => problem(400, 'The request is invalid.', { 'body.rules[0].priority': ['must be >= 1'] }));
    const err = (await request('POST', '/applications', { body: {} }).catch((e: unknown) => e)) as ApiProblem;
    expect(err).toBeInstanceOf(ApiProblem);
    expect(err.status).toBe(400);
    expect(err.fieldErrors['body.rules[0].priority']).toEqual(['must be >= 1']);
    expect(calls[0].headers['x-csrf-token']).toBe('abc.def');
    expect(errorsUnder(err.fieldErrors, 'body.rules')).toEqual(['[0].priority: must be >= 1']);
  });

  it('reads hash routes with their query', () => {
    const r = parseHash('#/logs/x?entity_type=token');
    expect(r.parts).toEqual(['logs', 'x']);
    expect(r.query.get('entity_type')).toBe('token');
  });
});
