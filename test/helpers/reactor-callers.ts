import { createApplication } from './http.ts';
import type { TestServer } from './server.ts';

/**
 * The applications the reactor invocation tests act as: `writer` creates and reads back tokens
 * in every container; `invoker` may use every token (and create, for a tokenize block run as
 * the caller); `generalOnly` may use the tokens of /general/ only.
 */
export async function createReactorCallers(server: TestServer) {
  const writer = (await createApplication(server, {
    name: 'writer',
    type: 'private',
    rules: [{ priority: 1, container: '/', transform: 'reveal', permissions: ['token:create', 'token:read'] }],
  })).key as string;
  const invoker = (await createApplication(server, { name: 'invoker', type: 'private', permissions: ['token:use', 'token:create'] })) as { id: string; key: string };
  const generalOnly = (await createApplication(server, {
    name: 'general only',
    type: 'private',
    rules: [{ priority: 1, container: '/general/', transform: 'reveal', permissions: ['token:use'] }],
  })).key as string;
  return { writer, invoker, generalOnly };
}
