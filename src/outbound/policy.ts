import net from 'node:net';

/**
 * Which addresses outbound calls may reach. Everything that is not ordinary public
 * unicast is refused: an API that fetches caller-chosen URLs must not become a way
 * into the network it runs in (loopback admin ports, cloud metadata, the database).
 */

/** IANA special-purpose IPv4 ranges (RFC 6890 and successors) plus multicast and reserved. */
export const BLOCKED_IPV4: readonly string[] = [
  '0.0.0.0/8', // "this network"; 0.0.0.0 reaches the local host on Linux
  '10.0.0.0/8', // private
  '100.64.0.0/10', // carrier-grade NAT
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, including 169.254.169.254 cloud metadata
  '172.16.0.0/12', // private
  '192.0.0.0/24', // IETF protocol assignments
  '192.0.2.0/24', // TEST-NET-1
  '192.88.99.0/24', // deprecated 6to4 relay anycast
  '192.168.0.0/16', // private
  '198.18.0.0/15', // benchmarking
  '198.51.100.0/24', // TEST-NET-2
  '203.0.113.0/24', // TEST-NET-3
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, including 255.255.255.255 broadcast
];

/**
 * IPv6 is judged the other way round: only global unicast (2000::/3) can be public,
 * so everything outside it is refused (::, ::1, fc00::/7, fe80::/10, fec0::/10,
 * ff00::/8, 100::/64 …), as are these special ranges inside it. Forms that embed an
 * IPv4 address (::ffff:a.b.c.d, 64:ff9b::/96 NAT64, 2002::/16 6to4) are judged by
 * that IPv4 address instead — see `embeddedIpv4`.
 */
export const BLOCKED_IPV6_IN_GLOBAL: readonly string[] = [
  '2001::/32', // Teredo: the real endpoint is hidden in the address
  '2001:2::/48', // benchmarking
  '2001:10::/28', // ORCHID
  '2001:20::/28', // ORCHIDv2
  '2001:db8::/32', // documentation
  '3fff::/20', // documentation (RFC 9637)
];

/**
 * Ports of other protocols (SMTP, IRC, SSH, LDAP, …) that fetch refuses too (the Fetch
 * standard's "bad port" list). An HTTP request's body is caller-chosen text, and many such
 * servers skip lines they do not understand and obey the rest: to them Coffer would be a
 * relay for mail or commands, from its own address. The allowlist does not lift this.
 */
export const BLOCKED_PORTS: ReadonlySet<number> = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

const blockedV4 = new net.BlockList();
for (const cidr of BLOCKED_IPV4) addCidr(blockedV4, cidr);
const blockedV6 = new net.BlockList();
for (const cidr of BLOCKED_IPV6_IN_GLOBAL) addCidr(blockedV6, cidr);

/** True unless `ip` is a public unicast address. Anything that is not an IP at all counts as blocked. */
export function isBlockedAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return blockedV4.check(ip, 'ipv4');
  if (family !== 6) return true;
  const bytes = ipv6Bytes(ip);
  const v4 = embeddedIpv4(bytes);
  if (v4 !== undefined) return blockedV4.check(v4, 'ipv4');
  if ((bytes[0] & 0xe0) !== 0x20) return true; // outside 2000::/3
  return blockedV6.check(ip, 'ipv6');
}

/**
 * The IPv4 address an IPv6 address stands for, when it is one of the forms that
 * reach an IPv4 host: IPv4-mapped (::ffff:0:0/96), NAT64 well-known (64:ff9b::/96)
 * and 6to4 (2002::/16, the 6to4 router's address).
 */
export function embeddedIpv4(bytes: Uint8Array): string | undefined {
  const v4At = (i: number) => `${bytes[i]}.${bytes[i + 1]}.${bytes[i + 2]}.${bytes[i + 3]}`;
  if (bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return v4At(12);
  const nat64 = [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0];
  if (nat64.every((b, i) => bytes[i] === b)) return v4At(12);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return v4At(2);
  return undefined;
}

/** Parses a valid IPv6 literal (as `net.isIPv6` accepts it, brackets and zone stripped) into 16 bytes. */
export function ipv6Bytes(ip: string): Uint8Array {
  const zone = ip.indexOf('%');
  let text = zone === -1 ? ip : ip.slice(0, zone);
  const out = new Uint8Array(16);
  // A trailing dotted quad (::ffff:1.2.3.4) becomes two hex groups.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const [a, b, c, d] = tail.split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const restGroups = rest ? rest.split(':') : [];
  const groups =
    rest === undefined ? headGroups : [...headGroups, ...Array(8 - headGroups.length - restGroups.length).fill('0'), ...restGroups];
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  return out;
}

/** An IPv4-mapped IPv6 address judged as the IPv4 address it is; anything else unchanged. */
export function unmapIpv4(ip: string): string {
  if (net.isIP(ip) !== 6) return ip;
  const bytes = ipv6Bytes(ip);
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  return mapped ? `${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}` : ip;
}

export function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** `OUTBOUND_ALLOWLIST` parsed: hostnames matched exactly (case-insensitive), IPs and CIDRs by address. */
export type Allowlist = {
  hosts: ReadonlySet<string>;
  addresses: net.BlockList;
  entries: readonly string[];
};

/** Problems with allowlist entries, one message per bad entry; empty when all are usable. */
export function allowlistProblems(entries: readonly string[]): string[] {
  const problems: string[] = [];
  for (const entry of entries) {
    try {
      parseEntry(entry.trim(), new net.BlockList(), new Set());
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return problems;
}

/** Throws a TypeError naming the first entry that is neither a hostname, an IP nor a CIDR. */
export function parseAllowlist(entries: readonly string[]): Allowlist {
  const hosts = new Set<string>();
  const addresses = new net.BlockList();
  const kept: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (entry === '') continue;
    parseEntry(entry, addresses, hosts);
    kept.push(entry);
  }
  return { hosts, addresses, entries: kept };
}

function parseEntry(entry: string, addresses: net.BlockList, hosts: Set<string>): void {
  const bare = stripBrackets(entry);
  if (bare.includes('/')) {
    const [address, prefixText, ...extra] = bare.split('/');
    const family = net.isIP(stripBrackets(address));
    const prefix = Number(prefixText);
    const max = family === 4 ? 32 : 128;
    if (extra.length > 0 || family === 0 || !/^\d{1,3}$/.test(prefixText) || prefix > max) {
      throw new TypeError(`OUTBOUND_ALLOWLIST entry "${entry}" is not a valid CIDR`);
    }
    addresses.addSubnet(stripBrackets(address), prefix, family === 4 ? 'ipv4' : 'ipv6');
    return;
  }
  const family = net.isIP(bare);
  if (family !== 0) {
    addresses.addAddress(unmapIpv4(bare), net.isIP(unmapIpv4(bare)) === 4 ? 'ipv4' : 'ipv6');
    return;
  }
  const hostname = normalizeHostname(entry);
  // WHATWG parsing turns "2130706433" or "0x7f.1" into an IPv4 address; treat it as one.
  if (net.isIP(hostname) === 4) addresses.addAddress(hostname, 'ipv4');
  else hosts.add(hostname);
}

/** Dot-separated labels of letters, digits, '-' and '_' (after lower-casing and punycode), an optional final dot. */
const DNS_NAME = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?$/;

/** The hostname as a URL would carry it (lower case, punycode), without a trailing dot. */
export function normalizeHostname(name: string): string {
  let hostname: string;
  try {
    const url = new URL(`http://${name}/`);
    if (url.host !== url.hostname || url.username || url.password || url.pathname !== '/' || url.search || url.hash) throw new Error();
    hostname = url.hostname;
  } catch {
    throw new TypeError(`OUTBOUND_ALLOWLIST entry "${name}" is not a hostname, IP address or CIDR`);
  }
  // URLs accept hosts like "*.corp.example"; as an entry that would silently match only the
  // literal name "*.corp.example" while its writer believes the subdomains are allowed.
  if (!DNS_NAME.test(hostname)) {
    throw new TypeError(`OUTBOUND_ALLOWLIST entry "${name}" is not a hostname, IP address or CIDR (there are no wildcards: name each host, or give a CIDR)`);
  }
  return hostname.endsWith('.') ? hostname.slice(0, -1) : hostname;
}

/** The decision used both for literal-IP URLs and for every address a hostname resolves to. */
export class AddressPolicy {
  readonly allowlist: Allowlist;

  constructor(allowlist: readonly string[]) {
    this.allowlist = parseAllowlist(allowlist);
  }

  /** A hostname named in the allowlist may resolve to anything. */
  allowsHost(hostname: string): boolean {
    if (this.allowlist.hosts.size === 0) return false;
    const name = stripBrackets(hostname).toLowerCase();
    return this.allowlist.hosts.has(name.endsWith('.') ? name.slice(0, -1) : name);
  }

  allowsAddress(ip: string): boolean {
    const bare = stripBrackets(ip);
    const family = net.isIP(bare);
    if (family === 0) return false;
    if (!isBlockedAddress(bare)) return true;
    const unmapped = unmapIpv4(bare);
    return this.allowlist.addresses.check(unmapped, net.isIP(unmapped) === 4 ? 'ipv4' : 'ipv6');
  }
}

function addCidr(list: net.BlockList, cidr: string): void {
  const [address, prefix] = cidr.split('/');
  list.addSubnet(address, Number(prefix), net.isIP(address) === 4 ? 'ipv4' : 'ipv6');
}
