import SerializerSelector from '@fastify/fast-json-stringify-compiler';
import type { FastifyServerOptions } from 'fastify';
import type { FastifyValidationResult } from 'fastify/types/schema.js';

type Validator = FastifyValidationResult;
type Serializer = (data: unknown) => string;

/**
 * Route schemas compiled when a route first needs them. Fastify otherwise compiles, at
 * start-up, every route's validators (Ajv) and every response serializer
 * (fast-json-stringify): the code they generate for all of Coffer's routes held ~10 MB of
 * heap in every process, each cluster worker included, most of it for routes that process
 * may never serve. A route's first request pays its compilation instead (a few milliseconds,
 * once per process).
 *
 * `compileAll` compiles every one not yet compiled: a schema that cannot compile still fails
 * a test (test/http/lazy-schemas.test.ts), not only the first request that needs it.
 */
export class LazySchemas {
  /** What is still to compile; each entry leaves once compiled. */
  readonly #pending = new Set<() => void>();

  /** A validator that compiles on its first call; Fastify reads a failed check's `errors` from it. */
  validator(compile: () => Validator): Validator {
    const compiled = this.#once(compile);
    const lazy: Validator = (data: unknown) => {
      const check = compiled();
      const result = check(data);
      lazy.errors = check.errors;
      return result;
    };
    return lazy;
  }

  /** Fastify's schema controller option: its own response serializers, each made on first use. */
  schemaController(): NonNullable<FastifyServerOptions['schemaController']> {
    return {
      compilersFactory: {
        buildSerializer: (externalSchemas: unknown, options: unknown) => {
          const compile = SerializerSelector()(externalSchemas, options as Parameters<ReturnType<typeof SerializerSelector>>[1]);
          return (route: Parameters<typeof compile>[0]): Serializer => {
            const compiled = this.#once(() => compile(route));
            return (data) => compiled()(data);
          };
        },
      },
    };
  }

  /** What `compile` makes, made on the first call and kept; pending until then. */
  #once<T>(compile: () => T): () => T {
    let made: T | undefined;
    const make = () => {
      if (made === undefined) {
        made = compile();
        this.#pending.delete(make);
      }
      return made;
    };
    this.#pending.add(make);
    return make;
  }

  /** Compiles everything not compiled yet; how many that was. */
  compileAll(): number {
    const all = [...this.#pending];
    for (const make of all) make();
    return all.length;
  }
}

const byApp = new WeakMap<object, LazySchemas>();

export function attachLazySchemas(app: object, schemas: LazySchemas): void {
  byApp.set(app, schemas);
}

/** Compiles every route schema of `app` not compiled yet (see LazySchemas); how many that was. */
export function compileRouteSchemas(app: object): number {
  const schemas = byApp.get(app);
  if (!schemas) throw new Error('this app was not made by createServer');
  return schemas.compileAll();
}
