import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { call } from '../helpers/http.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

/**
 * The structure of the served OpenAPI document, checked without a third-party validator:
 * what clients generated from it rely on. Every operation answers some 2xx, a 400 when it
 * takes input (413 and 415 when that input is a body), 401 and 403 when it needs a key, with
 * problem details for errors; every $ref resolves; operationIds, when given, are unique.
 */

type Doc = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function findings(doc: Doc): string[] {
  const out: string[] = [];
  const operationIds = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths as Record<string, Doc>)) {
    for (const method of METHODS.filter((m) => item[m])) {
      const op = item[method];
      const at = `${method.toUpperCase()} ${path}`;
      const statuses = Object.keys(op.responses ?? {});
      const has = (s: string) => statuses.includes(s);
      if (!statuses.some((s) => s.startsWith('2'))) out.push(`${at}: no 2xx response`);
      if (!Array.isArray(op.security)) out.push(`${at}: says nothing of security (public operations say [])`);
      if ((op.parameters?.length || op.requestBody) && !has('400')) out.push(`${at}: takes input but documents no 400`);
      if (op.requestBody && !(has('413') && has('415'))) out.push(`${at}: takes a body but documents no 413 and 415`);
      if (op.security?.length) {
        for (const s of ['401', '403']) if (!has(s)) out.push(`${at}: needs a key but documents no ${s}`);
        // Errors are sent as application/problem+json (http/errors.ts sendProblem).
        for (const s of statuses.filter((s) => /^[45]/.test(s))) {
          if (!op.responses[s].content?.['application/problem+json']) out.push(`${at}: ${s} is not application/problem+json`);
        }
      }
      if (op.operationId !== undefined) {
        if (operationIds.has(op.operationId)) out.push(`${at}: operationId ${op.operationId} is also ${operationIds.get(op.operationId)}'s`);
        operationIds.set(op.operationId, at);
      }
    }
  }
  for (const ref of refsIn(doc)) if (resolve(doc, ref) === undefined) out.push(`$ref ${ref} does not resolve`);
  return out;
}

function refsIn(value: unknown, out: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) refsIn(v, out);
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

/** A local JSON pointer (RFC 6901) into the document; only local references are expected. */
function resolve(doc: Doc, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined;
  let node: any = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

describe('the OpenAPI document', () => {
  let server: TestServer;
  let doc: Doc;
  before(async () => {
    server = await startTestServer();
    const res = await call(server, 'GET', '/openapi.json');
    assert.equal(res.status, 200);
    doc = res.body;
  });
  after(() => server.stop());

  it('documents, for every operation, the responses its callers can get', () => {
    assert.ok(Object.keys(doc.paths).length > 10, 'the document lists the routes');
    assert.deepEqual(findings(doc), []);
  });

  it('refers to one Problem component for problem details', () => {
    assert.ok(doc.components.schemas.Problem?.properties?.request_id);
    const notFound = doc.paths['/tokens/{id}'].get.responses['404'];
    assert.deepEqual(notFound.content['application/problem+json'].schema, { $ref: '#/components/schemas/Problem' });
  });

  it('reports a route that loses its 401 or 403, a dangling $ref and a repeated operationId', () => {
    const broken = structuredClone(doc);
    delete broken.paths['/tokens/{id}'].get.responses['401'];
    delete broken.paths['/applications'].post.responses['403'];
    broken.paths['/ping'].get.responses['200'].content['application/json'].schema = { $ref: '#/components/schemas/Nope' };
    broken.paths['/ping'].get.operationId = 'same';
    broken.paths['/health/ready'].get.operationId = 'same';
    assert.deepEqual(findings(broken).sort(), [
      '$ref #/components/schemas/Nope does not resolve',
      'GET /health/ready: operationId same is also GET /ping\'s',
      'GET /tokens/{id}: needs a key but documents no 401',
      'POST /applications: needs a key but documents no 403',
    ]);
  });
});
