import type { Database, Tx } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/database.ts';
import { uuidv4 } from '../../db/ids.ts';
import { ApiError } from '../../http/errors.ts';
import { fillUserNames, findUser, findUserByEmail, insertUser, setUserEmail, type UserRow } from './store.ts';

export type { UserRow } from './store.ts';
export type UserService = ReturnType<typeof createUserService>;

/** The User object of the API: `id`, and `email`, names and `picture` where known. */
export function presentUser(u: Pick<UserRow, 'id' | 'email' | 'first_name' | 'last_name' | 'picture'>) {
  return {
    id: u.id,
    ...(u.email !== null ? { email: u.email } : {}),
    ...(u.first_name !== null ? { first_name: u.first_name } : {}),
    ...(u.last_name !== null ? { last_name: u.last_name } : {}),
    ...(u.picture !== null ? { picture: u.picture } : {}),
  };
}

/** A user's name as people read it in an e-mail or a page: "Jane Doe", else the address. */
export function displayName(u: Pick<UserRow, 'email' | 'first_name' | 'last_name'>): string | undefined {
  const name = [u.first_name, u.last_name].filter((s) => s && s.trim() !== '').join(' ');
  return name !== '' ? name : u.email ?? undefined;
}

/** People: one user per e-mail address (case-insensitively), who may be a member of several tenants. */
export function createUserService(deps: { db: Database }) {
  const { db } = deps;
  return {
    get: (id: string, tx?: Tx) => findUser(db, id, tx),
    byEmail: (email: string, tx?: Tx) => findUserByEmail(db, email, tx),

    /**
     * The user with this e-mail, made if there is none, in `tx`: an invitee who is already a
     * user (a member elsewhere) joins as that user, keeping the names they have.
     */
    async findOrCreate(tx: Tx, email: string, names: { first_name: string; last_name: string }): Promise<{ user: UserRow; created: boolean }> {
      const existing = await findUserByEmail(db, email, tx, { lock: true });
      if (existing) return { user: (await fillUserNames(db, existing.id, names, tx))!, created: false };
      try {
        // A savepoint: a concurrent acceptance by the same address must not abort the whole transaction.
        const user = await db.transaction((sp) => insertUser(db, { id: uuidv4(), email, ...names }, sp), tx);
        return { user, created: true };
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        const raced = await findUserByEmail(db, email, tx, { lock: true });
        if (!raced) throw err;
        return { user: (await fillUserNames(db, raced.id, names, tx))!, created: false };
      }
    },

    /** Gives the user an e-mail address (the owner's, from COFFER_OWNER_EMAIL); 409 when another user has it. */
    async setEmail(id: string, email: string, tx?: Tx): Promise<void> {
      try {
        await db.transaction((sp) => setUserEmail(db, id, email, sp), tx);
      } catch (err) {
        if (isUniqueViolation(err)) throw ApiError.conflict('Another user has this e-mail address.');
        throw err;
      }
    },
  };
}
