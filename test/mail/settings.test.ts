import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError, loadConfig } from '../../src/config.ts';

/** The problems loadConfig reports for `env`; fails if it accepts it. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
  assert.fail(`accepted ${JSON.stringify(env)}`);
}

const WITH_FROM = { MAIL_FROM: 'Coffer <coffer@example.com>' };

describe('mail settings', () => {
  it('default to the outbox under DATA_DIR, links to http://HOST:PORT, 6 attempts over about 50 minutes', () => {
    const mail = loadConfig({ DATA_DIR: '/srv/coffer' }).mail;
    assert.equal(mail.smtp, undefined);
    assert.equal(mail.outboxDir, path.join('/srv/coffer', 'outbox'));
    assert.equal(mail.from, 'Coffer <coffer@localhost>');
    assert.equal(mail.publicUrl, 'http://127.0.0.1:8080');
    assert.equal(mail.maxAttempts, 6);
    assert.deepEqual(mail.retrySchedule, [10_000, 60_000, 240_000, 900_000, 1_800_000]);
    assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '9000' }).mail.publicUrl, 'http://0.0.0.0:9000');
    assert.equal(loadConfig({ HOST: '::1', PORT: '9000' }).mail.publicUrl, 'http://[::1]:9000');
  });

  it('take PUBLIC_URL as an absolute http(s) base, path prefix kept, trailing slash dropped', () => {
    assert.equal(loadConfig({ PUBLIC_URL: 'https://coffer.example.com/' }).mail.publicUrl, 'https://coffer.example.com');
    assert.equal(loadConfig({ PUBLIC_URL: 'HTTPS://Coffer.Example.com:8443/vault/' }).mail.publicUrl, 'https://coffer.example.com:8443/vault');
    assert.equal(loadConfig({ PUBLIC_URL: 'http://10.0.0.5:8080' }).mail.publicUrl, 'http://10.0.0.5:8080');
  });

  it('refuse a PUBLIC_URL that is not an absolute http(s) URL, or carries credentials, a query or a fragment', () => {
    for (const bad of ['coffer.example.com', '/coffer', 'ftp://coffer.example.com', 'javascript:alert(1)', 'https://user:pw@coffer.example.com', 'https://coffer.example.com/?a=1', 'https://coffer.example.com/#x', 'https://coffer.example.com/?']) {
      const found = problems({ PUBLIC_URL: bad });
      assert.equal(found.length, 1, `${bad}: ${found.join('; ')}`);
      assert.match(found[0], /^PUBLIC_URL must /, bad);
    }
  });

  it('parse SMTP_URL: smtp:// on 587 with STARTTLS when offered, smtps:// on 465, credentials percent-decoded', () => {
    const plain = loadConfig({ SMTP_URL: 'smtp://mail.example', ...WITH_FROM }).mail;
    assert.deepEqual(plain.smtp, {
      host: 'mail.example', port: 587, secure: false, auth: undefined, requireTLS: false, rejectUnauthorized: true, name: undefined, display: 'smtp://mail.example:587',
    });
    assert.equal(plain.from, 'Coffer <coffer@example.com>');
    const tls = loadConfig({ SMTP_URL: 'smtps://apikey:s%40cr%3Aet@smtp.provider.example', MAIL_FROM: 'no-reply@example.com' }).mail.smtp!;
    assert.equal(tls.port, 465);
    assert.equal(tls.secure, true);
    assert.deepEqual(tls.auth, { user: 'apikey', pass: 's@cr:et' });
    assert.equal(tls.display, 'smtps://smtp.provider.example:465');
    const options = loadConfig({ SMTP_URL: 'smtp://relay.internal:2525/?requireTLS=true&tls.rejectUnauthorized=false&name=coffer.example.com', ...WITH_FROM }).mail.smtp!;
    assert.equal(options.port, 2525);
    assert.equal(options.requireTLS, true);
    assert.equal(options.rejectUnauthorized, false);
    assert.equal(options.name, 'coffer.example.com');
    assert.equal(loadConfig({ SMTP_URL: 'smtp://[::1]:25', ...WITH_FROM }).mail.smtp!.host, '::1');
  });

  it('refuse a malformed SMTP_URL, naming the setting and never quoting its password', () => {
    const bad = [
      'mail.example:25',
      'http://pw-user:hunter2@mail.example',
      'smtp://',
      'smtp://pw-user:hunter2@mail.example/path',
      'smtp://pw-user:hunter2@mail.example#frag',
      'smtp://:hunter2@mail.example',
      // Options that would log the SMTP dialogue, or are not one of those taken.
      'smtp://pw-user:hunter2@mail.example?debug=true',
      'smtp://pw-user:hunter2@mail.example?logger=true',
      'smtp://pw-user:hunter2@mail.example?requireTLS=yes',
      'smtp://pw-user:hunter2@mail.example?name=bad%20name',
      'smtp://pw-user:hunt%ZZer2@mail.example',
    ];
    for (const value of bad) {
      const found = problems({ SMTP_URL: value, ...WITH_FROM });
      assert.ok(found.length >= 1 && found.every((p) => p.startsWith('SMTP_URL')), `${value}: ${found.join('; ')}`);
      assert.ok(found.every((p) => !p.includes('hunter2') && !p.includes('hunt%ZZer2')), `${value}: ${found.join('; ')}`);
    }
  });

  it('require MAIL_FROM with SMTP_URL, and take only one well-formed address', () => {
    assert.deepEqual(problems({ SMTP_URL: 'smtp://mail.example' }), [
      'MAIL_FROM must be set when SMTP_URL is: the sender of every message, e.g. "Coffer <coffer@example.com>"',
    ]);
    for (const bad of ['coffer', 'coffer@', '@example.com', 'a@example.com, b@example.com', 'Team: a@example.com;', 'Coffer <coffer@example.com>\nBcc: x@example.com']) {
      const found = problems({ MAIL_FROM: bad });
      assert.equal(found.length, 1, bad);
      assert.match(found[0], /^MAIL_FROM must /, bad);
    }
    assert.equal(loadConfig({ MAIL_FROM: '"Coffer, Inc." <billing@example.com>' }).mail.from, '"Coffer, Inc." <billing@example.com>');
  });

  it('read MAIL_MAX_ATTEMPTS and MAIL_RETRY_SCHEDULE', () => {
    const mail = loadConfig({ MAIL_MAX_ATTEMPTS: '3', MAIL_RETRY_SCHEDULE: '50ms,1s' }).mail;
    assert.equal(mail.maxAttempts, 3);
    assert.deepEqual(mail.retrySchedule, [50, 1000]);
    for (const bad of ['0', '51', 'x']) assert.match(problems({ MAIL_MAX_ATTEMPTS: bad })[0], /^MAIL_MAX_ATTEMPTS must be a whole number from 1 to 50/);
    for (const bad of ['5', '25h', '1s,,2s']) assert.match(problems({ MAIL_RETRY_SCHEDULE: bad })[0], /^MAIL_RETRY_SCHEDULE must be/);
  });

  it('are reported together with every other problem', () => {
    const found = problems({ SMTP_URL: 'http://mail.example', PUBLIC_URL: 'nope', PORT: 'x' });
    assert.ok(found.some((p) => p.startsWith('SMTP_URL')));
    assert.ok(found.some((p) => p.startsWith('MAIL_FROM must be set')));
    assert.ok(found.some((p) => p.startsWith('PUBLIC_URL')));
    assert.ok(found.some((p) => p.startsWith('PORT')));
  });
});
