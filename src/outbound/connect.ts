import dns from 'node:dns';
import net from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import { buildConnector } from 'undici';
import { Gate } from '../gate.ts';
import { OutboundError } from './errors.ts';
import { type AddressPolicy, stripBrackets } from './policy.ts';

export type ResolvedAddress = { address: string; family: number };
/** Resolves a hostname to every address it has; the default is the system resolver (`dns.lookup`, all: true). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * The system resolver runs on libuv's thread pool, which crypto and file work share, and a
 * name whose DNS server never answers holds its thread for the resolver's whole timeout, long
 * after the caller gave up. Tenants choose the names: at most this many lookups run at once
 * (the pool has 16 threads under `coffer`, see bin/coffer.js); the rest wait their turn.
 */
export const MAX_CONCURRENT_LOOKUPS = 8;

const lookups = new Gate(MAX_CONCURRENT_LOOKUPS);

export const systemResolver: Resolver = (hostname) => lookups.run(() => dns.promises.lookup(hostname, { all: true, order: 'verbatim' }));

export type LookupCallback = (err: Error | null, address: string | ResolvedAddress[], family?: number) => void;

export type GuardedConnectorOptions = {
  policy: AddressPolicy;
  resolve: Resolver;
  connectTimeoutMs: number;
  ca?: ConnectionOptions['ca'];
};

export type GuardedLookup = (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

/**
 * A `lookup` for net.connect / tls.connect, which call it for hostnames (never for
 * literal IPs). It resolves every address, refuses the name if any address is blocked,
 * and hands back only checked addresses — the socket connects to exactly those. With
 * autoSelectFamily (Node's default) it is asked for all of them and races them.
 */
export function createGuardedLookup(policy: AddressPolicy, resolve: Resolver): GuardedLookup {
  const checkedAddresses = async (hostname: string): Promise<ResolvedAddress[]> => {
    let addresses: ResolvedAddress[];
    try {
      addresses = await resolve(hostname);
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      const detail = typeof code === 'string' && /^[A-Z_0-9]{2,40}$/.test(code) ? ` (${code})` : '';
      throw new OutboundError('dns_failed', `could not resolve ${hostname}${detail}`);
    }
    if (!Array.isArray(addresses) || addresses.length === 0) throw new OutboundError('dns_failed', `${hostname} has no addresses`);
    if (policy.allowsHost(hostname)) return addresses;
    // Refuse if ANY address is blocked: connecting to "the public one" would still let whoever
    // controls the DNS answer choose what a retry or the other address family reaches.
    // The address stays out of the message: it would map internal DNS for a caller.
    if (addresses.some((a) => !policy.allowsAddress(a.address))) {
      throw new OutboundError('blocked_address', `${hostname} resolves to a private, loopback or reserved address`);
    }
    return addresses;
  };

  return (hostname, lookupOptions, callback) => {
    checkedAddresses(hostname).then(
      (addresses) => {
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
        const usable = family ? addresses.filter((a) => a.family === family) : addresses;
        if (usable.length === 0) {
          callback(new OutboundError('dns_failed', `${hostname} has no IPv${family} address`), '');
        } else if (lookupOptions.all) {
          callback(null, usable);
        } else {
          callback(null, usable[0].address, usable[0].family);
        }
      },
      (err: unknown) => callback(err as Error, ''),
    );
  };
}

/**
 * The socket factory for undici. The address check happens here, on every new
 * connection, rather than when a URL is accepted: a hostname is resolved once, every
 * address it resolves to is checked, and the socket connects only to those checked
 * addresses — so a DNS answer that changes between "validate" and "connect" (DNS
 * rebinding) cannot slip a private address through. Keep-alive sockets were checked
 * when they were opened. Literal IPs are checked here too, behind validateUrl.
 */
export function createGuardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const { policy, resolve } = options;
  const lookup = createGuardedLookup(policy, resolve);

  const base = buildConnector({
    lookup: lookup as unknown as net.LookupFunction,
    timeout: options.connectTimeoutMs,
    ...(options.ca ? { ca: options.ca } : {}),
  });

  return (connectOptions, callback) => {
    // undici hands IPv6 origins over without brackets; strip them anyway in case that changes.
    const host = stripBrackets(connectOptions.hostname);
    if (net.isIP(host) !== 0 && !policy.allowsAddress(host)) {
      callback(new OutboundError('blocked_address', `${host} is a private, loopback or reserved address`), null);
      return;
    }
    base(connectOptions, callback);
  };
}
