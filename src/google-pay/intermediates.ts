import type { KeyObject } from 'node:crypto';

/**
 * Intermediate signing keys already verified under a root key. Google signs one intermediate
 * key and uses it, with the same signature, for every token until it expires (days), so after
 * the first token only the message signature needs verifying: an ECDSA verification and a key
 * import less per token. Exactly what was verified is remembered — this signedKey, this
 * signature, this root key — so a token is accepted only where a full check would accept it;
 * expiry is checked on every token. Bounded: the oldest entry goes first.
 */
export type VerifiedIntermediate = { key: KeyObject; expiration: number; signedBy: Map<KeyObject, Set<string>> };

export class VerifiedIntermediates {
  private readonly entries = new Map<string, VerifiedIntermediate>();
  private readonly max: number;

  constructor(max = 64) {
    this.max = max;
  }

  get size(): number {
    return this.entries.size;
  }

  get(signedKey: string): VerifiedIntermediate | undefined {
    return this.entries.get(signedKey);
  }

  /** Whether `signature` (base64) by `root` over `signedKey` was verified before. */
  verified(signedKey: string, root: KeyObject, signature: string): boolean {
    return this.entries.get(signedKey)?.signedBy.get(root)?.has(signature) === true;
  }

  remember(signedKey: string, key: KeyObject, expiration: number, root: KeyObject, signature: string): void {
    let entry = this.entries.get(signedKey);
    if (!entry) {
      if (this.entries.size >= this.max) this.entries.delete(this.entries.keys().next().value!);
      entry = { key, expiration, signedBy: new Map() };
      this.entries.set(signedKey, entry);
    }
    const signatures = entry.signedBy.get(root) ?? new Set<string>();
    if (signatures.size < 16) signatures.add(signature);
    entry.signedBy.set(root, signatures);
  }
}
