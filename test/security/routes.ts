import { permissionDefinition, type ApplicationType } from '../../src/access/permissions.ts';

/**
 * The route table as the served OpenAPI document describes it: the isolation test and the
 * fuzz suite are generated from this, so a new route is covered without being listed.
 */

export type JsonSchema = Record<string, any>;
export type Parameter = { name: string; in: 'path' | 'query' | 'header'; required: boolean; schema: JsonSchema };

export type Operation = {
  method: string;
  /** The OpenAPI path template, e.g. `/applications/{id}/keys/{keyId}`. */
  path: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  body: { contentType: string; schema: JsonSchema } | undefined;
  /** Whether the route needs an SVC-API-KEY at all (from `security`). */
  secured: boolean;
  /** `x-permissions`: every permission the route requires (empty: any valid key). */
  permissions: string[];
  /** `x-application-types`: the only application types whose keys may call it, when restricted. */
  types: ApplicationType[] | undefined;
  /** Every property name its success responses declare, at any depth (to find where secrets come back). */
  responseFields: Set<string>;
};

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

export async function fetchOpenApi(baseUrl: string): Promise<JsonSchema> {
  const res = await fetch(`${baseUrl}/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return (await res.json()) as JsonSchema;
}

export function operationsOf(doc: JsonSchema): Operation[] {
  const out: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const params = (op.parameters ?? []) as Parameter[];
      const content = op.requestBody?.content as Record<string, { schema: JsonSchema }> | undefined;
      const contentType = content ? Object.keys(content)[0] : undefined;
      const secured = Array.isArray(op.security) && op.security.length > 0;
      if (secured && !Array.isArray(op['x-permissions'])) {
        throw new Error(`${method.toUpperCase()} ${path} is secured but has no x-permissions (see src/http/openapi.ts)`);
      }
      out.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path'),
        queryParams: params.filter((p) => p.in === 'query'),
        body: contentType ? { contentType, schema: content![contentType].schema ?? {} } : undefined,
        secured,
        permissions: op['x-permissions'] ?? [],
        types: op['x-application-types'],
        responseFields: propertyNames(
          Object.entries(op.responses ?? {})
            .filter(([status]) => status.startsWith('2'))
            .flatMap(([, r]: [string, any]) => Object.values(r.content ?? {}).map((c: any) => c.schema ?? {})),
        ),
      });
    }
  }
  return out;
}

function propertyNames(schemas: JsonSchema[], out = new Set<string>()): Set<string> {
  for (const schema of schemas) {
    for (const [name, sub] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
      out.add(name);
      propertyNames([sub], out);
    }
    if (schema.items) propertyNames([schema.items], out);
    for (const option of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) propertyNames([option], out);
  }
  return out;
}

export function label(op: Pick<Operation, 'method' | 'path'>): string {
  return `${op.method} ${op.path}`;
}

const TYPE_PREFERENCE: ApplicationType[] = ['management', 'private', 'public'];

/** The application type whose key may call the route: the one named, or the first that can hold every permission. */
export function keyTypeOf(op: Operation): ApplicationType {
  if (op.types?.length) return op.types[0];
  for (const type of TYPE_PREFERENCE) {
    if (op.permissions.every((p) => permissionDefinition(p)?.application_types.includes(type))) return type;
  }
  throw new Error(`${label(op)}: no application type can hold ${op.permissions.join(', ')}`);
}

/** `/applications/{id}/keys/{keyId}` with values → a concrete path (values percent-encoded). */
export function fillPath(template: string, values: Record<string, string>, encode = true): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (!(name in values)) throw new Error(`no value for {${name}} in ${template}`);
    return encode ? encodeURIComponent(values[name]) : values[name];
  });
}

/** For each path parameter, the template before it: the "collection" whose resource the id names. */
export function collectionsOf(op: Operation): { param: string; collection: string }[] {
  const out: { param: string; collection: string }[] = [];
  const re = /\{([^}]+)\}/g;
  for (let m = re.exec(op.path); m; m = re.exec(op.path)) {
    out.push({ param: m[1], collection: op.path.slice(0, m.index).replace(/\/$/, '') });
  }
  return out;
}
