import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Logger } from '../../logger.ts';

/**
 * Where the embedded server's binaries and data are, and which OS user runs it.
 *
 * PostgreSQL refuses to run as root, so as root it runs as the OS user `postgres`, which must
 * be able to walk to both. Where it can (or where DATA_DIR itself is the only obstacle, which
 * is ours to open), everything stays where it always was: the package's binaries under
 * node_modules and the cluster in DATA_DIR/postgres. A checkout in a private directory (a
 * 0700 home, anything under `mktemp -d`) is not ours to open up, so instead:
 * - the binaries are copied once to EMBEDDED_POSTGRES_DIR/postgresql/<version>-<os>-<arch>,
 *   root-owned and readable by all (keyed by version, so an upgrade never mixes two);
 * - a new cluster is made in EMBEDDED_POSTGRES_DIR/clusters/<random id>/postgres, and
 *   DATA_DIR/postgres becomes a symbolic link to it: the same DATA_DIR finds the same data
 *   on every start, and two DATA_DIRs never share a cluster (each first start makes its own).
 * A link an operator made by moving a cluster elsewhere is followed the same way, by any user.
 * docs/operations.md, "The embedded database", has the operator's side of this.
 */
export type Ids = { uid: number; gid: number };
export type Binaries = { postgres: string; initdb: string };
export type Location = { bins: Binaries; pgdata: string; ids?: Ids };

export const DEFAULT_EMBEDDED_POSTGRES_DIR = '/var/lib/coffer/embedded-postgres';

const OS_USER = 'postgres';

/** Which DATA_DIR a relocated cluster belongs to: its real path, in the cluster's directory. */
const OWNER_FILE = 'data-dir';

export async function locate(dataDir: string, systemDir: string, log: Logger): Promise<Location> {
  const bins = await packageBinaries();
  fs.mkdirSync(dataDir, { recursive: true });
  if (process.getuid?.() !== 0) {
    const link = path.join(dataDir, 'postgres');
    return { bins, pgdata: lstat(link)?.isSymbolicLink() ? followLink(link, dataDir, log) : link };
  }
  const ids = ensureOsUser(log);
  return {
    ids,
    bins: blockedAt(path.dirname(bins.postgres), ids) ? copyDistribution(bins, systemDir, ids, log) : bins,
    pgdata: placeCluster(dataDir, systemDir, ids, log),
  };
}

async function packageBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(`No embedded PostgreSQL binaries for ${os.platform()}-${os.arch()} (package ${name}). Set DATABASE_URL to use an external PostgreSQL.`);
  }
}

/** PostgreSQL refuses to run as root; as root we run it as the unprivileged `postgres` OS user. */
function ensureOsUser(log: Logger): Ids {
  const lookup = (): Ids | undefined => {
    try {
      const uid = Number(execFileSync('id', ['-u', OS_USER], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
      const gid = Number(execFileSync('id', ['-g', OS_USER], { stdio: ['ignore', 'pipe', 'ignore'] }).toString());
      return { uid, gid };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  log.warn(`running as root: creating the unprivileged OS user "${OS_USER}" to run the embedded PostgreSQL`);
  execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER]);
  const created = lookup();
  if (!created) throw new Error(`could not create the OS user "${OS_USER}" for the embedded PostgreSQL`);
  return created;
}

/**
 * DATA_DIR/postgres as it is: a link made by an earlier start, a cluster made in place, or
 * nothing yet. A new cluster goes in place when the postgres user can walk to DATA_DIR, or
 * could once DATA_DIR itself (ours) is opened for it; otherwise under EMBEDDED_POSTGRES_DIR.
 */
function placeCluster(dataDir: string, systemDir: string, ids: Ids, log: Logger): string {
  const link = path.join(dataDir, 'postgres');
  const existing = lstat(link);
  if (existing?.isSymbolicLink()) return followLink(link, dataDir, log);
  if (existing || !blockedAt(path.dirname(path.resolve(dataDir)), ids)) {
    openDataDir(dataDir, ids, log);
    return link;
  }
  return relocate(link, dataDir, systemDir, ids, log);
}

/**
 * DATA_DIR itself is ours, so it gets search-only permission for others (its files keep their
 * own modes). An older cluster made in place under a directory the postgres user cannot enter
 * is the operator's to move, and we say how.
 */
function openDataDir(dataDir: string, ids: Ids, log: Logger): void {
  const resolved = path.resolve(dataDir);
  const st = fs.statSync(resolved);
  if (!canSearch(st, ids)) {
    fs.chmodSync(resolved, st.mode | 0o001);
    log.info({ dir: resolved }, 'granted search permission on DATA_DIR to the embedded PostgreSQL user');
  }
  const blocked = blockedAt(resolved, ids);
  if (blocked) {
    throw new Error(
      `The embedded PostgreSQL runs as the OS user "${OS_USER}", which cannot reach the cluster in ${path.join(resolved, 'postgres')} ` +
        `because ${blocked.dir} has mode ${blocked.mode.toString(8)}. Either run "chmod o+x ${blocked.dir}", move the cluster ` +
        `(stop Coffer, move ${path.join(resolved, 'postgres')} to a reachable directory and leave a symbolic link to it in its place), ` +
        `or set DATABASE_URL to use an external PostgreSQL.`,
    );
  }
}

function relocate(link: string, dataDir: string, systemDir: string, ids: Ids, log: Logger): string {
  const clusters = path.join(systemDir, 'clusters');
  makeReachableDir(clusters, systemDir, ids);
  const root = path.join(clusters, randomBytes(8).toString('hex'));
  fs.mkdirSync(root, { mode: 0o755 });
  fs.chmodSync(root, 0o755); // whatever the umask: the postgres user walks through it to its data
  fs.writeFileSync(path.join(root, OWNER_FILE), `${fs.realpathSync(dataDir)}\n`, { mode: 0o644 });
  try {
    fs.symlinkSync(path.join(root, 'postgres'), link);
  } catch (err) {
    fs.rmSync(root, { recursive: true, force: true });
    // Another process starting on the same DATA_DIR linked it first: use its cluster.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return followLink(link, dataDir, log);
    throw err;
  }
  log.info(
    { data_dir: path.resolve(dataDir), cluster: root },
    `the OS user "${OS_USER}" cannot reach DATA_DIR, so the embedded PostgreSQL cluster is made under EMBEDDED_POSTGRES_DIR, with a link to it in DATA_DIR`,
  );
  return path.join(root, 'postgres');
}

/**
 * The cluster a link in DATA_DIR points to. A DATA_DIR that was moved takes its cluster along;
 * one that was copied, link and all, while the original is still there would share the
 * original's database (tenants and all) and is refused.
 */
function followLink(link: string, dataDir: string, log: Logger): string {
  const target = path.resolve(path.dirname(link), fs.readlinkSync(link));
  const root = path.dirname(target);
  if (!fs.existsSync(root)) {
    throw new Error(
      `${link} points to the embedded PostgreSQL cluster in ${target}, but ${root} does not exist. ` +
        `Restore it from a backup, or remove the link ${link} to start with a new, empty database.`,
    );
  }
  const me = fs.realpathSync(dataDir);
  const ownerFile = path.join(root, OWNER_FILE);
  const recorded = readText(ownerFile);
  if (recorded === me) return target;
  if (recorded && pointsTo(path.join(recorded, 'postgres'), target)) {
    throw new Error(
      `${me} and ${recorded} are two DATA_DIRs whose links point to the same embedded PostgreSQL cluster (${root}): ` +
        `one was copied from the other. Remove the link ${link} to give this DATA_DIR a new, empty database of its own.`,
    );
  }
  fs.writeFileSync(ownerFile, `${me}\n`, { mode: 0o644 });
  log.info({ data_dir: me, was: recorded, cluster: root }, 'DATA_DIR has moved; its embedded PostgreSQL cluster moves with it');
  return target;
}

/**
 * A root-owned copy of the package's binaries (bin, lib, share) that every user can read: the
 * server finds its libraries and share files relative to its own binary. Copied to a scratch
 * name and renamed, so a copy cut short is never taken for a complete one.
 */
function copyDistribution(bins: Binaries, systemDir: string, ids: Ids, log: Logger): Binaries {
  const native = path.resolve(path.dirname(bins.postgres), '..');
  const { version } = JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  const dists = path.join(systemDir, 'postgresql');
  makeReachableDir(dists, systemDir, ids);
  const target = path.join(dists, `${version}-${os.platform()}-${os.arch()}`);
  if (!fs.existsSync(target)) {
    const scratch = `${target}.copy-${process.pid}`;
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.cpSync(native, scratch, { recursive: true, verbatimSymlinks: true });
    openForAll(scratch);
    try {
      fs.renameSync(scratch, target);
      log.info({ from: native, to: target }, `the OS user "${OS_USER}" cannot reach the embedded PostgreSQL's binaries: copied them`);
    } catch (err) {
      fs.rmSync(scratch, { recursive: true, force: true });
      if (!fs.existsSync(target)) throw err; // else another process copied them first
    }
  }
  return { postgres: path.join(target, 'bin', 'postgres'), initdb: path.join(target, 'bin', 'initdb') };
}

/** Directories searchable and files readable by all, whatever the umask of whoever installed the package. */
function openForAll(dir: string): void {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isSymbolicLink()) continue;
    const file = path.join(entry.parentPath, entry.name);
    fs.chmodSync(file, fs.statSync(file).mode | (entry.isDirectory() ? 0o555 : 0o444));
  }
  fs.chmodSync(dir, 0o755);
}

function makeReachableDir(dir: string, systemDir: string, ids: Ids): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  const blocked = blockedAt(dir, ids);
  if (blocked) {
    throw new Error(
      `The embedded PostgreSQL runs as the OS user "${OS_USER}", which cannot reach EMBEDDED_POSTGRES_DIR (${systemDir}) ` +
        `because ${blocked.dir} has mode ${blocked.mode.toString(8)}. Set EMBEDDED_POSTGRES_DIR to a directory it can reach ` +
        `(the default is ${DEFAULT_EMBEDDED_POSTGRES_DIR}), or set DATABASE_URL to use an external PostgreSQL.`,
    );
  }
}

/** The first directory on the way to `target` (itself included) the postgres user cannot search, if any. */
function blockedAt(target: string, ids: Ids): { dir: string; mode: number } | undefined {
  let blocked: { dir: string; mode: number } | undefined;
  for (let dir = path.resolve(target); ; dir = path.dirname(dir)) {
    const st = fs.statSync(dir);
    if (!canSearch(st, ids)) blocked = { dir, mode: st.mode & 0o777 };
    if (dir === path.dirname(dir)) return blocked;
  }
}

function canSearch(st: fs.Stats, ids: Ids): boolean {
  if (st.uid === ids.uid) return (st.mode & 0o100) !== 0;
  if (st.gid === ids.gid) return (st.mode & 0o010) !== 0;
  return (st.mode & 0o001) !== 0;
}

function pointsTo(link: string, target: string): boolean {
  const st = lstat(link);
  return st?.isSymbolicLink() === true && path.resolve(path.dirname(link), fs.readlinkSync(link)) === target;
}

function lstat(file: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(file);
  } catch {
    return undefined;
  }
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}
