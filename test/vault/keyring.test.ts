import assert from 'node:assert/strict';
import { createSecretKey, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it, mock } from 'node:test';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/logger.ts';
import { loadKeyring, LocalKeyring, open, parseKeys, seal } from '../../src/vault/keyring.ts';

const k1 = randomBytes(32);
const k2 = randomBytes(32);
const b64 = (b: Buffer) => b.toString('base64');

/** A logger whose lines the test can read. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { log: createLogger('info', stream), lines };
}

describe('parseKeys', () => {
  it('reads id:base64key entries in order, trimming blanks and spaces', () => {
    const keys = parseKeys(` new:${b64(k2)} , old:${b64(k1)},`);
    assert.deepEqual(keys.map((k) => k.id), ['new', 'old']);
    assert.ok(keys[0].key.equals(k2));
    assert.ok(keys[1].key.equals(k1));
  });

  it('keeps a colon inside the key part (only the first colon separates)', () => {
    assert.deepEqual(parseKeys('a:b:c').map((k) => k.id), ['a']);
  });

  const bad: [label: string, spec: string, message: RegExp][] = [
    ['no colon', b64(k1), /id:base64key/],
    ['an empty id', `:${b64(k1)}`, /id:base64key/],
    ['no colon in the second entry', `good:${b64(k1)},${b64(k2)}`, /id:base64key/],
  ];
  for (const [label, spec, message] of bad) {
    it(`rejects an entry with ${label}`, () => {
      assert.throws(() => parseKeys(spec), (err: Error) => {
        assert.match(err.message, message);
        // The message must not echo the key it could not parse.
        assert.ok(!err.message.includes(b64(k1)) && !err.message.includes(b64(k2)), err.message);
        return true;
      });
    });
  }
});

describe('LocalKeyring', () => {
  const bad: [label: string, spec: string, message: RegExp][] = [
    ['a key of 16 bytes', `short:${b64(randomBytes(16))}`, /key "short" must be 256 bits/],
    ['a key of 33 bytes', `long:${b64(randomBytes(33))}`, /key "long" must be 256 bits/],
    ['an empty key', 'empty:', /key "empty" must be 256 bits/],
    ['a key that is not base64', 'junk:not base64 at all!', /key "junk" must be 256 bits/],
    ['an id used twice', `a:${b64(k1)},a:${b64(k2)}`, /key id "a" appears twice/],
    ['an id with a space', `my key:${b64(k1)}`, /key id "my key" must be 1-64 characters/],
    ['an id with a slash', `a/b:${b64(k1)}`, /key id "a\/b" must be 1-64 characters/],
    ['an id of 65 characters', `${'x'.repeat(65)}:${b64(k1)}`, /must be 1-64 characters/],
  ];
  for (const [label, spec, message] of bad) {
    it(`rejects ${label}, naming the key but not its value`, () => {
      assert.throws(() => new LocalKeyring(parseKeys(spec)), (err: Error) => {
        assert.match(err.message, message);
        assert.ok(!err.message.includes(b64(k1)) && !err.message.includes(b64(k2)), err.message);
        return true;
      });
    });
  }

  it('rejects an empty keyring', () => {
    assert.throws(() => new LocalKeyring(parseKeys(' , ')), /at least one key/);
  });

  it('wraps with the first key and unwraps with any', () => {
    const both = new LocalKeyring(parseKeys(`new:${b64(k2)},old:${b64(k1)}`));
    const oldOnly = new LocalKeyring(parseKeys(`old:${b64(k1)}`));
    assert.equal(both.currentId, 'new');
    assert.ok(both.has('old') && both.has('new') && !both.has('other'));

    const aad = Buffer.from('tenant-key\u0000t\u0000data\u0000id');
    const material = randomBytes(32);
    const byOld = oldOnly.wrap(material, aad);
    assert.equal(byOld.kekId, 'old');
    assert.ok(both.unwrap('old', byOld.wrapped, aad).equals(material));

    const byNew = both.wrap(material, aad);
    assert.equal(byNew.kekId, 'new');
    assert.ok(!byNew.wrapped.includes(material), 'the wrapped key does not contain the key');
    assert.throws(() => oldOnly.unwrap('new', byNew.wrapped, aad), /wrapped by KEK "new", which is not in the keyring/);
    // Right id, wrong key material: authentication fails rather than yielding garbage.
    // The error names the key id, since that is what the operator has to check.
    const impostor = new LocalKeyring(parseKeys(`new:${b64(k1)}`));
    assert.throws(() => impostor.unwrap('new', byNew.wrapped, aad), (err: Error) => {
      assert.match(err.message, /KEK "new" does not open a data key wrapped under that id/);
      assert.ok(!err.message.includes(b64(k1)) && !err.message.includes(b64(k2)), err.message);
      return true;
    });
  });
});

describe('seal / open (AES-256-GCM)', () => {
  const key = createSecretKey(k1);
  const aad = Buffer.from('token\u0000tenant-a\u0000token-1');
  const plaintext = Buffer.from(JSON.stringify({ data: '4242424242424242' }));

  it('round-trips, with a fresh IV each time', () => {
    const a = seal(key, plaintext, aad);
    const b = seal(key, plaintext, aad);
    assert.ok(open(key, a, aad).equals(plaintext));
    assert.ok(open(key, b, aad).equals(plaintext));
    assert.ok(!a.equals(b), 'two seals of the same plaintext differ');
    assert.equal(a.length, 12 + 16 + plaintext.length);
    assert.ok(!a.includes(plaintext));
  });

  it('round-trips an empty plaintext', () => {
    assert.equal(open(key, seal(key, Buffer.alloc(0), aad), aad).length, 0);
  });

  it('fails with another AAD (another token or tenant) or another key', () => {
    const sealed = seal(key, plaintext, aad);
    assert.throws(() => open(key, sealed, Buffer.from('token\u0000tenant-a\u0000token-2')));
    assert.throws(() => open(key, sealed, Buffer.from('token\u0000tenant-b\u0000token-1')));
    assert.throws(() => open(key, sealed, Buffer.alloc(0)));
    assert.throws(() => open(createSecretKey(k2), sealed, aad));
  });

  it('fails when any single byte is flipped: IV, tag or ciphertext', () => {
    const sealed = seal(key, plaintext, aad);
    for (const i of [0, 11, 12, 27, 28, sealed.length - 1]) {
      const tampered = Buffer.from(sealed);
      tampered[i] ^= 0x01;
      assert.throws(() => open(key, tampered, aad), `byte ${i}`);
    }
  });

  it('fails when truncated or extended', () => {
    const sealed = seal(key, plaintext, aad);
    assert.throws(() => open(key, sealed.subarray(0, sealed.length - 1), aad));
    assert.throws(() => open(key, Buffer.concat([sealed, Buffer.from([0])]), aad));
    assert.throws(() => open(key, Buffer.alloc(0), aad));
    assert.throws(() => open(key, sealed.subarray(0, 12), aad));
  });

  it('rejects a shortened authentication tag (GCM accepts 4-byte tags unless told the length)', () => {
    // For an empty plaintext the first bytes of the real tag are a valid short tag, so a
    // decipher that accepts short tags would authenticate this forged-down value.
    const sealed = seal(key, Buffer.alloc(0), aad);
    for (const tagBytes of [4, 8, 12]) {
      assert.throws(() => open(key, sealed.subarray(0, 12 + tagBytes), aad), `a ${tagBytes}-byte tag`);
    }
  });
});

describe('loadKeyring', () => {
  const dirs: string[] = [];
  after(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));
  const tempDir = () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'coffer-keyring-'));
    dirs.push(d);
    return d;
  };

  it('uses COFFER_KEYS when set and touches no file', () => {
    const dataDir = path.join(tempDir(), 'data');
    const { log, lines } = capturingLogger();
    const ring = loadKeyring(`k2:${b64(k2)},k1:${b64(k1)}`, dataDir, log);
    assert.equal(ring.currentId, 'k2');
    assert.ok(ring.has('k1'));
    assert.equal(fs.existsSync(dataDir), false);
    assert.equal(lines.length, 0);
  });

  it('rejects a bad COFFER_KEYS rather than falling back to a key file', () => {
    const dataDir = tempDir();
    assert.throws(() => loadKeyring('nocolon', dataDir, capturingLogger().log), /id:base64key/);
    assert.equal(fs.existsSync(path.join(dataDir, 'keys')), false);
  });

  it('without COFFER_KEYS creates DATA_DIR/keys with mode 0600, warns once, and reuses it', () => {
    const dataDir = path.join(tempDir(), 'nested', 'data');
    const { log, lines } = capturingLogger();
    const first = loadKeyring(undefined, dataDir, log);
    const file = path.join(dataDir, 'keys');
    assert.equal(fs.statSync(file).mode & 0o777, 0o600);
    assert.match(first.currentId, /^\d{8}$/, 'the generated key is named by its date');
    const warnings = lines.filter((l) => l.level === 40);
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0].msg), /COFFER_KEYS is not set/);
    const content = fs.readFileSync(file, 'utf8');
    assert.match(content, /^\d{8}:[A-Za-z0-9+/]{43}=\n$/);
    assert.ok(!JSON.stringify(lines).includes(content.trim().split(':')[1]), 'the generated key is not logged');

    // The second load reads the same file: what one wraps, the other unwraps; no new warning.
    const second = loadKeyring(undefined, dataDir, log);
    assert.equal(second.currentId, first.currentId);
    assert.equal(fs.readFileSync(file, 'utf8'), content);
    const aad = Buffer.from('x');
    const material = randomBytes(32);
    const { kekId, wrapped } = first.wrap(material, aad);
    assert.ok(second.unwrap(kekId, wrapped, aad).equals(material));
    assert.equal(lines.filter((l) => l.level === 40).length, 1);
  });

  it('a process starting while another writes the key file sees no file or a whole one, never an empty one', () => {
    const dataDir = tempDir();
    const original = fs.writeFileSync;
    let other: { error?: string; ring?: LocalKeyring } | undefined;
    let interleaved = false;
    // Models the interleaving of two first starts: the writer's file exists (created
    // exclusively) but its content is not written yet when the other process loads.
    const spy = mock.method(fs, 'writeFileSync', (target: fs.PathOrFileDescriptor, data: string, options: fs.WriteFileOptions) => {
      if (!interleaved && String(target).startsWith(dataDir)) {
        interleaved = true;
        original(target, '', options);
        try {
          other = { ring: loadKeyring(undefined, dataDir, capturingLogger().log) };
        } catch (err) {
          other = { error: (err as Error).message };
        }
        return original(target, data, { flag: 'w' });
      }
      return original(target, data, options);
    });
    try {
      const mine = loadKeyring(undefined, dataDir, capturingLogger().log);
      assert.equal(other?.error, undefined, 'the other process loads a keyring');
      assert.equal(other!.ring!.currentId, mine.currentId);
      const aad = Buffer.from('x');
      const material = randomBytes(32);
      const { kekId, wrapped } = other!.ring!.wrap(material, aad);
      assert.ok(mine.unwrap(kekId, wrapped, aad).equals(material), 'both use the same key');
      assert.deepEqual(fs.readdirSync(dataDir), ['keys'], 'no temporary file is left behind');
      assert.equal(fs.statSync(path.join(dataDir, 'keys')).mode & 0o777, 0o600);
    } finally {
      spy.mock.restore();
    }
  });

  for (const loose of [0o644, 0o640, 0o604, 0o666]) {
    it(`narrows an existing key file of mode 0${loose.toString(8)} to 0600 and warns, without logging the key`, () => {
      const dataDir = tempDir();
      const file = path.join(dataDir, 'keys');
      fs.writeFileSync(file, `a:${b64(k1)}\n`);
      fs.chmodSync(file, loose);
      const { log, lines } = capturingLogger();
      const ring = loadKeyring(undefined, dataDir, log);
      assert.equal(ring.currentId, 'a');
      assert.equal(fs.statSync(file).mode & 0o777, 0o600);
      const warnings = lines.filter((l) => l.level === 40);
      assert.equal(warnings.length, 1);
      assert.match(String(warnings[0].msg), /readable by others/);
      assert.equal(warnings[0].mode, `0${loose.toString(8)}`);
      assert.ok(!JSON.stringify(lines).includes(b64(k1)));
      // Once narrowed, a later start says nothing.
      loadKeyring(undefined, dataDir, log);
      assert.equal(lines.filter((l) => l.level === 40).length, 1);
    });
  }

  it('leaves a key file of mode 0400 as it is', () => {
    const dataDir = tempDir();
    const file = path.join(dataDir, 'keys');
    fs.writeFileSync(file, `a:${b64(k1)}\n`, { mode: 0o400 });
    const { log, lines } = capturingLogger();
    loadKeyring(undefined, dataDir, log);
    assert.equal(fs.statSync(file).mode & 0o777, 0o400);
    assert.equal(lines.length, 0);
  });

  it('reads a key file of several lines, newest first', () => {
    const dataDir = tempDir();
    fs.writeFileSync(path.join(dataDir, 'keys'), `b:${b64(k2)}\na:${b64(k1)}\n`, { mode: 0o600 });
    const ring = loadKeyring(undefined, dataDir, capturingLogger().log);
    assert.equal(ring.currentId, 'b');
    assert.ok(ring.has('a'));
  });
});
