import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from 'typebox';
import { APPLICATION_TYPES, PERMISSIONS } from '../../access/permissions.ts';
import { problems } from '../../http/schemas.ts';

const Permission = Type.Object({
  type: Type.String(),
  description: Type.String(),
  application_types: Type.Array(Type.Enum([...APPLICATION_TYPES])),
});

/** The permission catalogue is static, so this feature is only a route. */
export function registerPermissionRoutes(app: FastifyInstance): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.get('/permissions', {
    config: { access: { permissions: [] } },
    schema: {
      tags: ['permissions'],
      summary: 'The permission catalogue, optionally for one application type',
      querystring: Type.Object({ application_type: Type.Optional(Type.Enum([...APPLICATION_TYPES])) }),
      response: { 200: Type.Array(Permission), ...problems() },
    },
  }, async (request) => {
    const type = request.query.application_type;
    return PERMISSIONS.filter((p) => !type || p.application_types.includes(type)).map((p) => ({
      type: p.type,
      description: p.description,
      application_types: p.application_types,
    }));
  });
}
