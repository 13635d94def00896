import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.ts';

/** Help asked for is output (stdout, exit 0); a missing command is an error (stderr, exit 1), as an unknown one is. */
describe('coffer usage', () => {
  it('--help, -h and help print the commands on stdout and exit 0', async () => {
    for (const arg of ['--help', '-h', 'help']) {
      const res = await runCli([arg], {});
      assert.equal(res.code, 0, arg);
      assert.match(res.stdout, /^Usage: coffer <command>/, arg);
      assert.match(res.stdout, /serve \[--workers N\][\s\S]*migrate[\s\S]*init \[--tenant-name NAME\] \[--owner-email EMAIL\] \[--json\][\s\S]*signin-link --email EMAIL[\s\S]*rotate-keys[\s\S]*quota TENANT_ID NAME VALUE/, arg);
      assert.equal(res.stderr, '', arg);
    }
  });

  it('no command prints the usage on stderr and exits 1', async () => {
    const res = await runCli([], {});
    assert.equal(res.code, 1);
    assert.equal(res.stdout, '');
    assert.match(res.stderr, /^Usage: coffer <command>/);
  });
});
