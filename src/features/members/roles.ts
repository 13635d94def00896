import { permissionsFor } from '../../access/permissions.ts';
import type { MemberRole } from './store.ts';

/**
 * What a signed-in member may do, by role: OWNER and ADMIN every management permission of the
 * catalogue, READ_ONLY only its `:read` ones. Members act as a management application does, so
 * no role holds a token permission: no member is ever shown token data.
 */
export function rolePermissions(role: MemberRole): string[] {
  const all = permissionsFor('management').map((p) => p.type);
  return role === 'READ_ONLY' ? all.filter((p) => p.endsWith(':read')) : all;
}
