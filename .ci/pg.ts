// Runs one SQL statement: `node .ci/pg.ts <url> <sql>`. Used by .ci/run to create and drop its database.
import pg from 'pg';

const [url, sql] = process.argv.slice(2);
const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
await client.connect();
try {
  await client.query(sql);
} finally {
  await client.end();
}
