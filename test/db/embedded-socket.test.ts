import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import { connectionUrl, socketDirFor } from '../../src/db/embedded/server-process.ts';

describe('the embedded server\'s socket directory', () => {
  it('is the data directory when its socket\'s address fits', () => {
    assert.equal(socketDirFor('/var/lib/coffer/embedded-postgres/clusters/0123456789abcdef/postgres'), '/var/lib/coffer/embedded-postgres/clusters/0123456789abcdef/postgres');
  });

  it('is none for a data directory whose socket address would be too long, or that PostgreSQL\'s list cannot hold', () => {
    // The socket's address is "<dir>/.s.PGSQL.<port>", at most 103 bytes where macOS allows the least.
    const fits = `/${'d'.repeat(103 - '/.s.PGSQL.65535.lock'.length - 1)}`;
    assert.equal(socketDirFor(fits), fits);
    assert.equal(socketDirFor(`${fits}x`), undefined);
    assert.equal(socketDirFor(`/srv/${'é'.repeat(40)}`), undefined, 'bytes are counted, not characters');
    assert.equal(socketDirFor('/srv/a,b/postgres'), undefined);
    assert.equal(socketDirFor('/srv/"quoted"/postgres'), undefined);
  });

  it('is named in the connection string, so that pg connects through it; without one, TCP on 127.0.0.1', () => {
    const viaSocket = new pg.Client({ connectionString: connectionUrl(5433, 'p@ss/word', '/srv/coffer data/postgres') });
    assert.equal(viaSocket.host, '/srv/coffer data/postgres');
    assert.equal(viaSocket.port, 5433);
    assert.equal(viaSocket.password, 'p@ss/word');
    const viaTcp = new pg.Client({ connectionString: connectionUrl(5433, 'p@ss/word') });
    assert.equal(viaTcp.host, '127.0.0.1');
    assert.equal(viaTcp.port, 5433);
  });
});
