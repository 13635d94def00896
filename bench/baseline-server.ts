/**
 * The baseline the Coffer scenarios are compared with: plain Fastify, started the way
 * Coffer is (its own child process of the same Node, a pino logger at the same
 * LOG_LEVEL, PORT and HOST from the environment), with none of Coffer's hooks, schemas
 * or database. Add routes here when a new baseline needs one.
 */
import Fastify from 'fastify';
import { pino } from 'pino';

const app = Fastify({ loggerInstance: pino({ level: process.env.LOG_LEVEL ?? 'info' }) });

const BARE = { status: 'ok' };
app.get('/bare', async () => BARE);
app.get('/health/ready', async () => ({ status: 'ready' }));

// The proxy scenarios' destination (and, called directly, their baseline): any POST body
// answered as received, with its Content-Type. Bodies stay bytes: no JSON parse or serialize.
await app.register(async (echo) => {
  echo.removeAllContentTypeParsers();
  echo.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  echo.post('/echo', async (request, reply) => reply.type(request.headers['content-type'] ?? 'application/octet-stream').send(request.body));
});

await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void app.close());
