/**
 * The part of a proxy sealed in its row with the tenant's data key: its invocation key and its
 * configuration (the owner's secrets). The row keeps only the key's hash, to find the proxy by.
 */
import type { Vault } from '../../vault/tenant-keys.ts';
import type { ProxyRow } from './store.ts';

export type Sealed = { key: string; configuration: Record<string, string> | null };

export async function unseal(vault: Vault, row: ProxyRow): Promise<Sealed> {
  return (await vault.decrypt(row.tenant_id, secretAad(row.id), row.secret_ciphertext, row.secret_key_id)) as Sealed;
}

export function seal(vault: Vault, tenantId: string, proxyId: string, secret: Sealed): Promise<{ ciphertext: Buffer; dataKeyId: string }> {
  return vault.encrypt(tenantId, secretAad(proxyId), secret);
}

/** Binds the ciphertext to its proxy: a sealed secret copied into another row does not open. */
function secretAad(proxyId: string): string {
  return `proxy:${proxyId}`;
}
