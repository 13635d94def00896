import assert from 'node:assert/strict';
import { permissionsFor, type ApplicationType } from '../../src/access/permissions.ts';
import { call, createApplication, type CallOptions } from './http.ts';
import type { TestServer } from './server.ts';

export type RouteUnderTest = {
  method: string;
  path: string;
  /** The permissions the route needs; a key with every other permission of its type must get 403. */
  permissions: string[];
  /** The application type whose keys may call the route. */
  type: ApplicationType;
} & Omit<CallOptions, 'key'>;

/** The shared security cases of an authenticated route: no key, a bad key, a key without the permission. */
export async function assertAuthCases(server: TestServer, route: RouteUnderTest): Promise<void> {
  const { method, path, permissions, type, ...opts } = route;
  const none = await call(server, method, path, opts);
  assert.equal(none.status, 401, `${method} ${path} without a key`);
  assert.match(none.headers.get('content-type') ?? '', /^application\/problem\+json/);

  const bogus = await call(server, method, path, { ...opts, key: 'key_not-a-real-key' });
  assert.equal(bogus.status, 401, `${method} ${path} with an unknown key`);

  const others = permissionsFor(type).map((p) => p.type).filter((p) => !permissions.includes(p));
  if (others.length > 0) {
    const weak = await createApplication(server, { name: 'lacks permission', type, permissions: others });
    const denied = await call(server, method, path, { ...opts, key: weak.key });
    assert.equal(denied.status, 403, `${method} ${path} with a ${type} key lacking ${permissions.join(', ')}`);
    assert.equal(denied.body.status, 403);
  }
}
