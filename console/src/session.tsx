import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

/** GET /me: who is signed in, in which tenant, with which role and permissions. */
export type Me = {
  user: { id: string; email: string; first_name?: string; last_name?: string };
  tenant_id: string;
  member_id: string;
  role: 'OWNER' | 'ADMIN' | 'READ_ONLY' | string;
  permissions: string[];
  session_expires_at: string;
  tenants: { id: string; name: string; role: string; member_id: string }[];
};

export const SessionContext = createContext<Me | undefined>(undefined);

export function useMe(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error('useMe outside a signed-in session');
  return me;
}

/** Whether the member's role grants `permission` (what the console shows and enables follows this). */
export function useCan(): (permission: string) => boolean {
  const me = useContext(SessionContext);
  return (permission) => !!me && me.permissions.includes(permission);
}

/** Revealing plaintext is for OWNER and ADMIN only (the API refuses READ_ONLY with a 403 anyway). */
export function canReveal(me: Me): boolean {
  return (me.role === 'OWNER' || me.role === 'ADMIN') && me.permissions.includes('token:read');
}
