import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export type TestSmtpServer = {
  port: number;
  url: string;
  /** Every message accepted, parsed with mailparser, in arrival order. */
  received: ParsedMail[];
  /** The raw messages, as the server received them. */
  raw: Buffer[];
  /** The envelope of each accepted message (MAIL FROM, RCPT TO). */
  envelopes: { from: string; to: string[] }[];
  /** RCPT TO commands seen, refused ones included. */
  rcptAttempts: number;
  /** Refuse every RCPT TO with `550 5.1.1` while true. */
  refuseRecipients: boolean;
  /** Waits until `n` messages were received. */
  waitFor(n: number, ms?: number): Promise<ParsedMail[]>;
  close(): Promise<void>;
};

/**
 * A real SMTP server on a free loopback port (`smtp-server`), without TLS (no STARTTLS is
 * offered). With `auth`, it refuses mail from clients that did not log in with it.
 */
export async function startSmtpServer(opts: { auth?: { user: string; pass: string } } = {}): Promise<TestSmtpServer> {
  const state: TestSmtpServer = {
    port: 0,
    url: '',
    received: [],
    raw: [],
    envelopes: [],
    rcptAttempts: 0,
    refuseRecipients: false,
    async waitFor(n, ms = 20_000) {
      const end = Date.now() + ms;
      while (state.received.length < n) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${n} messages (got ${state.received.length})`);
        await sleep(20);
      }
      return state.received;
    },
    close: async () => {},
  };
  const server = new SMTPServer({
    secure: false,
    disabledCommands: opts.auth ? ['STARTTLS'] : ['STARTTLS', 'AUTH'],
    authOptional: !opts.auth,
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, callback) {
      if (opts.auth && auth.username === opts.auth.user && auth.password === opts.auth.pass) callback(null, { user: auth.username });
      else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      state.rcptAttempts++;
      if (state.refuseRecipients) callback(Object.assign(new Error(`5.1.1 <${address.address}>: Recipient address rejected`), { responseCode: 550 }));
      else callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const raw = Buffer.concat(chunks);
        simpleParser(raw).then((parsed) => {
          state.raw.push(raw);
          state.envelopes.push({
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            to: session.envelope.rcptTo.map((r) => r.address),
          });
          state.received.push(parsed);
          callback();
        }, (err: Error) => callback(err));
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.port = (server.server.address() as AddressInfo).port;
  state.url = opts.auth
    ? `smtp://${encodeURIComponent(opts.auth.user)}:${encodeURIComponent(opts.auth.pass)}@127.0.0.1:${state.port}`
    : `smtp://127.0.0.1:${state.port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}
