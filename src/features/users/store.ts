import type { Database, Tx } from '../../db/database.ts';

/** A person; users belong to no one tenant (a user may be a member of several), so these take no tenant id. */
export type UserRow = {
  id: string;
  email: string | null;
  first_name: string | null;
  last_name: string | null;
  picture: string | null;
  created_at: Date;
  modified_at: Date | null;
};

const COLUMNS = 'id, email, first_name, last_name, picture, created_at, modified_at';

export function findUser(db: Database, id: string, tx?: Tx): Promise<UserRow | undefined> {
  return db.one<UserRow>(`SELECT ${COLUMNS} FROM users WHERE id = $1`, [id], tx);
}

/** E-mail addresses are one user each whatever their case (users_email_key on lower(email)). */
export function findUserByEmail(db: Database, email: string, tx?: Tx, opts: { lock?: boolean } = {}): Promise<UserRow | undefined> {
  return db.one<UserRow>(`SELECT ${COLUMNS} FROM users WHERE lower(email) = lower($1)${opts.lock ? ' FOR UPDATE' : ''}`, [email], tx);
}

export async function insertUser(db: Database, u: { id: string; email: string | null; first_name: string | null; last_name: string | null }, tx?: Tx): Promise<UserRow> {
  return (await db.one<UserRow>(
    `INSERT INTO users (id, email, first_name, last_name) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [u.id, u.email, u.first_name, u.last_name],
    tx,
  ))!;
}

/** Fills in the names a user does not have yet; names a user already has are theirs to keep. */
export async function fillUserNames(db: Database, id: string, names: { first_name: string; last_name: string }, tx?: Tx): Promise<UserRow | undefined> {
  return db.one<UserRow>(
    `UPDATE users SET first_name = coalesce(first_name, $2), last_name = coalesce(last_name, $3),
       modified_at = CASE WHEN first_name IS NULL OR last_name IS NULL THEN now() ELSE modified_at END
     WHERE id = $1 RETURNING ${COLUMNS}`,
    [id, names.first_name, names.last_name],
    tx,
  );
}

export async function setUserEmail(db: Database, id: string, email: string, tx?: Tx): Promise<void> {
  await db.query(`UPDATE users SET email = $2, modified_at = now() WHERE id = $1`, [id, email], tx);
}
