import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { OutboundClient } from '../../src/outbound/client.ts';
import { AddressPolicy, allowlistProblems, ipv6Bytes, isBlockedAddress } from '../../src/outbound/policy.ts';
import { throwsWith } from './helpers.ts';

// Pure decisions and URL validation only: nothing in this file opens a socket.

const BLOCKED_V4 = [
  ['0.0.0.0', 'this network'],
  ['0.255.255.255', 'this network, last'],
  ['10.0.0.0', 'private 10/8'],
  ['10.255.255.255', 'private 10/8, last'],
  ['100.64.0.0', 'CGNAT'],
  ['100.127.255.255', 'CGNAT, last'],
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback, high'],
  ['169.254.0.1', 'link-local'],
  ['169.254.169.254', 'cloud metadata'],
  ['172.16.0.1', 'private 172.16/12'],
  ['172.31.255.255', 'private 172.16/12, last'],
  ['192.0.0.1', 'IETF protocol assignments'],
  ['192.0.2.10', 'TEST-NET-1'],
  ['192.88.99.1', '6to4 relay anycast'],
  ['192.168.0.1', 'private 192.168/16'],
  ['192.168.255.255', 'private 192.168/16, last'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.255', 'benchmarking, last'],
  ['198.51.100.7', 'TEST-NET-2'],
  ['203.0.113.9', 'TEST-NET-3'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.255', 'multicast, last'],
  ['240.0.0.1', 'reserved'],
  ['255.255.255.255', 'broadcast'],
] as const;

const PUBLIC_V4 = [
  '1.1.1.1',
  '8.8.8.8',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '192.0.1.0',
  '192.167.255.255',
  '192.169.0.0',
  '198.17.255.255',
  '198.20.0.0',
  '223.255.255.255',
];

const BLOCKED_V6 = [
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['0:0:0:0:0:0:0:1', 'loopback, long form'],
  ['::ffff:127.0.0.1', 'IPv4-mapped loopback, dotted'],
  ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
  ['0:0:0:0:0:ffff:7f00:0001', 'IPv4-mapped loopback, long form'],
  ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
  ['::ffff:10.0.0.1', 'IPv4-mapped private'],
  ['::ffff:0.0.0.0', 'IPv4-mapped this-network'],
  ['64:ff9b::127.0.0.1', 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', 'NAT64 of metadata, hex'],
  ['64:ff9b::10.1.2.3', 'NAT64 of private'],
  ['64:ff9b:1::1', 'NAT64 local-use prefix'],
  ['::127.0.0.1', 'IPv4-compatible (deprecated)'],
  ['::ffff:0:127.0.0.1', 'IPv4-translated'],
  ['100::1', 'discard-only'],
  ['fc00::1', 'unique local fc00::/7'],
  ['fd12:3456:789a::1', 'unique local fd'],
  ['fe80::1', 'link-local'],
  ['fe80::1%eth0', 'link-local with zone'],
  ['febf:ffff::1', 'link-local, last /10'],
  ['fec0::1', 'deprecated site-local'],
  ['ff00::', 'multicast'],
  ['ff02::1', 'multicast all-nodes'],
  ['2001:db8::1', 'documentation'],
  ['2001:db8:ffff:ffff::1', 'documentation, high'],
  ['3fff::1', 'documentation (RFC 9637)'],
  ['2001::1', 'Teredo'],
  ['2002:7f00:1::1', '6to4 of loopback'],
  ['2002:a9fe:a9fe::', '6to4 of metadata'],
  ['4000::1', 'outside global unicast'],
] as const;

const PUBLIC_V6 = [
  '2606:4700:4700::1111',
  '2001:4860:4860::8888',
  '2a00:1450:4001:830::200e',
  '::ffff:8.8.8.8',
  '::ffff:808:808',
  '64:ff9b::8.8.8.8',
  '2002:808:808::1',
  '2001:db9::1',
];

describe('isBlockedAddress', () => {
  for (const [ip, why] of BLOCKED_V4) test(`blocks ${ip} (${why})`, () => assert.equal(isBlockedAddress(ip), true));
  for (const ip of PUBLIC_V4) test(`allows public ${ip}`, () => assert.equal(isBlockedAddress(ip), false));
  for (const [ip, why] of BLOCKED_V6) test(`blocks ${ip} (${why})`, () => assert.equal(isBlockedAddress(ip), true));
  for (const ip of PUBLIC_V6) test(`allows public ${ip}`, () => assert.equal(isBlockedAddress(ip), false));
  for (const notIp of ['localhost', '', '1.2.3', '::g', '[::1]', '127.0.0.1 ']) {
    test(`treats non-IP ${JSON.stringify(notIp)} as blocked`, () => assert.equal(isBlockedAddress(notIp), true));
  }
});

test('ipv6Bytes parses compressed, long and dotted forms alike', () => {
  const hex = (ip: string) => Buffer.from(ipv6Bytes(ip)).toString('hex');
  assert.equal(hex('::1'), '00000000000000000000000000000001');
  assert.equal(hex('::ffff:127.0.0.1'), hex('::ffff:7f00:1'));
  assert.equal(hex('0:0:0:0:0:ffff:7f00:1'), hex('::ffff:7f00:1'));
  assert.equal(hex('2001:db8::'), '20010db8000000000000000000000000');
  assert.equal(hex('1:2:3:4:5:6:7:8'), '00010002000300040005000600070008');
  assert.equal(hex('fe80::1%lo'), hex('fe80::1'));
});

describe('AddressPolicy allowlist', () => {
  test('an allowlisted IP permits exactly that address, also in IPv4-mapped form', () => {
    const policy = new AddressPolicy(['127.0.0.1']);
    assert.equal(policy.allowsAddress('127.0.0.1'), true);
    assert.equal(policy.allowsAddress('::ffff:127.0.0.1'), true);
    assert.equal(policy.allowsAddress('127.0.0.2'), false);
    assert.equal(policy.allowsAddress('::1'), false);
  });

  test('CIDR entries permit their range only', () => {
    const policy = new AddressPolicy(['10.0.0.0/8', 'fd00::/8', ' 192.168.1.0/24 ']);
    assert.equal(policy.allowsAddress('10.1.2.3'), true);
    assert.equal(policy.allowsAddress('fd00::5'), true);
    assert.equal(policy.allowsAddress('fc00::5'), false);
    assert.equal(policy.allowsAddress('192.168.1.77'), true);
    assert.equal(policy.allowsAddress('192.168.2.1'), false);
    assert.equal(policy.allowsAddress('169.254.169.254'), false);
  });

  test('IPv6 addresses may be written with brackets', () => {
    const policy = new AddressPolicy(['[::1]']);
    assert.equal(policy.allowsAddress('::1'), true);
  });

  test('hostnames match exactly and case-insensitively, ignoring a trailing dot', () => {
    const policy = new AddressPolicy(['Vault.Internal', 'onprem.example.']);
    assert.equal(policy.allowsHost('vault.internal'), true);
    assert.equal(policy.allowsHost('VAULT.INTERNAL.'), true);
    assert.equal(policy.allowsHost('onprem.example'), true);
    assert.equal(policy.allowsHost('x.vault.internal'), false);
    assert.equal(policy.allowsHost('vault.internal.evil.com'), false);
    // A hostname entry permits the name, not the addresses it happens to have.
    assert.equal(policy.allowsAddress('10.0.0.1'), false);
  });

  test('numeric host spellings in the allowlist are read as the IP they are', () => {
    const policy = new AddressPolicy(['2130706433']);
    assert.equal(policy.allowsAddress('127.0.0.1'), true);
  });

  test('public addresses need no allowlist', () => {
    const policy = new AddressPolicy([]);
    assert.equal(policy.allowsAddress('8.8.8.8'), true);
    assert.equal(policy.allowsAddress('2606:4700:4700::1111'), true);
  });

  for (const bad of ['10.0.0.0/33', '10.0.0.0/abc', '::/129', 'example.com/8', '10.0.0.0/8/1', 'http://example.com', 'host:8080', 'a b', 'user@host', '*.corp.example', '*', 'corp.*', '.corp.example', 'a..b', "x!$&'()+,;=.example"]) {
    test(`rejects the malformed entry ${JSON.stringify(bad)}`, () => {
      assert.throws(() => new AddressPolicy([bad]), TypeError);
      assert.equal(allowlistProblems([bad]).length, 1);
      assert.throws(() => new OutboundClient({ allowlist: [bad] }), TypeError);
    });
  }

  test('empty entries are ignored', () => {
    assert.deepEqual(new AddressPolicy(['', '  ']).allowlist.entries, []);
    assert.deepEqual(allowlistProblems(['127.0.0.1', 'localhost', '10.0.0.0/8', '::1', 'fd00::/8']), []);
    assert.deepEqual(allowlistProblems(['Vault.Corp.Example.', 'my_host-1.example', 'bücher.example', 'xn--bcher-kva.example', '0x7f.1']), []);
  });
});

describe('validateUrl', () => {
  const client = new OutboundClient({ allowlist: [] });
  const allowing = new OutboundClient({ allowlist: ['127.0.0.1'] });
  after(() => Promise.all([client.close(), allowing.close()]));

  const blockedUrls = [
    'http://127.0.0.1/',
    'https://127.0.0.1:8443/x',
    'http://127.1/',
    'http://2130706433/', // decimal
    'http://0x7f.1/', // hex + short form
    'http://0x7f000001/',
    'http://0177.0.0.1/', // octal
    'http://017700000001/',
    'http://0/',
    'http://0.0.0.0:8080/',
    'http://169.254.169.254/latest/meta-data/',
    'http://0xa9.0xfe.0xa9.0xfe/', // metadata in hex
    'http://2852039166/', // metadata in decimal
    'http://10.0.0.1/',
    'http://3232235777/', // 192.168.1.1
    'http://100.64.0.1/',
    'http://255.255.255.255/',
    'http://224.0.0.1/',
    'http://[::1]/',
    'http://[::]/',
    'http://[0:0:0:0:0:0:0:1]:80/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::169.254.169.254]/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
    'http://[ff02::1]/',
    'http://[2001:db8::1]/',
    'HTTP://127.0.0.1/',
  ];
  for (const url of blockedUrls) {
    test(`blocks ${url}`, () => {
      throwsWith(() => client.validateUrl(url), 'blocked_address');
    });
  }

  test('the allowlisted loopback address passes in every spelling, its neighbours do not', () => {
    for (const url of ['http://127.0.0.1:1234/', 'http://2130706433/', 'http://0x7f.1/', 'http://127.0.0.1.:80/', 'http://[::ffff:127.0.0.1]/']) {
      assert.doesNotThrow(() => allowing.validateUrl(url), url);
    }
    throwsWith(() => allowing.validateUrl('http://127.0.0.2/'), 'blocked_address');
    throwsWith(() => allowing.validateUrl('http://[::1]/'), 'blocked_address');
  });

  test("ports of other protocols are refused (fetch's bad ports), even to allowlisted addresses", () => {
    for (const url of ['http://mail.example:25/', 'https://example.com:22/', 'http://example.com:6667/', 'http://[2606:4700::1]:587/', 'http://127.0.0.1:25/', 'http://127.0.0.1:0/']) {
      const err = throwsWith(() => allowing.validateUrl(url), 'blocked_address');
      assert.match(err.message, /^port \d+ /, url);
    }
    for (const url of ['http://example.com/', 'https://example.com/', 'http://example.com:8080/', 'https://example.com:8443/', 'http://127.0.0.1:3000/']) {
      assert.doesNotThrow(() => allowing.validateUrl(url), url);
    }
  });

  const invalidUrls = [
    ['ftp://example.com/file', 'ftp scheme'],
    ['file:///etc/passwd', 'file scheme'],
    ['gopher://127.0.0.1:6379/_INFO', 'gopher scheme'],
    ['ws://example.com/', 'websocket scheme'],
    ['data:text/plain,hi', 'data URL'],
    ['javascript:alert(1)', 'javascript URL'],
    ['/relative/path', 'relative path'],
    ['relative', 'bare word'],
    ['//example.com/x', 'scheme-relative'],
    ['', 'empty'],
    ['http://', 'no host'],
    ['http://user:pass@example.com/', 'credentials'],
    ['http://user@example.com/', 'username only'],
    ['https://:secret@example.com/', 'password only'],
    ['http://exa mple.com/', 'space in host'],
    ['http://[::1/', 'unterminated IPv6'],
    ['http://[fe80::1%25eth0]/', 'IPv6 zone id'],
  ] as const;
  for (const [url, why] of invalidUrls) {
    test(`refuses ${JSON.stringify(url)} as invalid_url (${why})`, () => {
      throwsWith(() => client.validateUrl(url), 'invalid_url');
    });
  }

  test('a non-string URL is invalid_url', () => {
    throwsWith(() => client.validateUrl(undefined as unknown as string), 'invalid_url');
    throwsWith(() => client.validateUrl(42 as unknown as string), 'invalid_url');
  });

  test('hostnames pass validation: they are checked at connect time, on their addresses', () => {
    assert.equal(client.validateUrl('http://localhost:8080/x').hostname, 'localhost');
    assert.equal(client.validateUrl('https://api.example.com/v1?q=1').href, 'https://api.example.com/v1?q=1');
  });

  test('public literal IPs pass validation', () => {
    assert.equal(client.validateUrl('http://8.8.8.8/').hostname, '8.8.8.8');
    assert.equal(client.validateUrl('https://[2606:4700:4700::1111]/').hostname, '[2606:4700:4700::1111]');
  });

  test('error messages leave out paths, queries and credentials', () => {
    const blocked = throwsWith(() => client.validateUrl('http://10.0.0.1/admin?api_key=SECRET123'), 'blocked_address');
    assert.doesNotMatch(blocked.message, /SECRET123|admin/);
    const creds = throwsWith(() => client.validateUrl('http://bob:SECRET123@example.com/'), 'invalid_url');
    assert.doesNotMatch(creds.message, /SECRET123|bob/);
    const scheme = throwsWith(() => client.validateUrl('ftp://example.com/SECRET123'), 'invalid_url');
    assert.doesNotMatch(scheme.message, /SECRET123/);
  });
});
