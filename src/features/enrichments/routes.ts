import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { BODY, problems } from '../../http/schemas.ts';
import { BankAccountVerification, BankAccountVerifyBody } from './schema.ts';
import type { EnrichmentService } from './service.ts';

export function registerEnrichmentRoutes(app: FastifyInstance, enrichments: EnrichmentService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();
  r.post('/enrichments/bank-account-verify', {
    // Never replayed, as POST /detokenize: a verification changes nothing, so running it again
    // is what a retry needs, checked against the access of the moment and audited again; and the
    // provider is called over the network, which must not happen inside the transaction an
    // idempotency key holds open.
    config: { access: { permissions: ['token:use'] }, idempotent: false },
    schema: {
      tags: ['enrichments'],
      summary: 'Verify that the bank account of a token can receive ACH transfers',
      description:
        'Needs token:use, with transform reveal, on a container of the token. A `bank` token holds the routing number; a ' +
        '`us_bank_account_number` token takes it as `routing_number`. Each verification is audited as a use of the token ' +
        '(operation `use`). 502: the provider did not answer.',
      body: BankAccountVerifyBody,
      response: { 200: BankAccountVerification, ...problems(404, 502, ...BODY) },
    },
  }, async (request) => enrichments.verifyBankAccount(principalOf(request), request.body));
}
