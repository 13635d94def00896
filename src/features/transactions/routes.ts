import type { FastifyInstance } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { principalOf } from '../../http/auth.ts';
import { idempotentId } from '../../http/idempotency.ts';
import { problems, WRITE } from '../../http/schemas.ts';
import { presentRefund, presentTransaction } from './present.ts';
import {
  CaptureBody, CreateTransactionBody, ListRefundsQuery, ListTransactionsQuery, RefundBody, RefundPage, RefundParams, RefundSchema, TransactionPage,
  TransactionParams, TransactionSchema,
} from './schema.ts';
import type { TransactionService } from './service.ts';

const tags = ['transactions'];
const BASE = '/orchestration/transactions';

export function registerTransactionRoutes(app: FastifyInstance, transactions: TransactionService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>();

  r.post(BASE, {
    config: { access: { permissions: ['token:use'] } },
    schema: {
      tags,
      summary: 'Create a transaction: authorize (or authorize and capture) a card token through a connection',
      description: 'The card is detokenized inside Coffer for the processor call (token:use with transform reveal on its container). '
        + 'The use-case rules of docs/orchestration.md are checked before anything is created. A payment that needs the buyer\'s '
        + 'approval (3DS) answers buyer_approval_pending with payment_method.approval_url.',
      body: CreateTransactionBody,
      response: { 201: TransactionSchema, ...problems(404, ...WRITE) },
    },
  }, async (request, reply) => reply.code(201).send(presentTransaction(await transactions.create(principalOf(request), request.body, idempotentId(request, 'transaction')))));

  r.get(BASE, {
    config: { access: { permissions: ['orchestration:transaction:read'] } },
    schema: { tags, summary: 'List transactions, newest first (cursor pages)', querystring: ListTransactionsQuery, response: { 200: TransactionPage, ...problems() } },
  }, async (request) => {
    const page = await transactions.list(principalOf(request), request.query);
    return { pagination: page.pagination, data: page.data.map(presentTransaction) };
  });

  r.get(`${BASE}/:transaction_id`, {
    config: { access: { permissions: ['orchestration:transaction:read'] } },
    schema: { tags, summary: 'Get a transaction', params: TransactionParams, response: { 200: TransactionSchema, ...problems(404) } },
  }, async (request) => presentTransaction(await transactions.get(principalOf(request), request.params.transaction_id)));

  r.post(`${BASE}/:transaction_id/capture`, {
    config: { access: { permissions: ['orchestration:transaction:capture'] } },
    schema: {
      tags,
      summary: 'Capture an authorized transaction (the whole authorized amount unless amount is given)',
      params: TransactionParams,
      body: CaptureBody,
      response: { 200: TransactionSchema, ...problems(404, ...WRITE) },
    },
  }, async (request) => presentTransaction(await transactions.capture(principalOf(request), request.params.transaction_id, request.body ?? {})));

  r.post(`${BASE}/:transaction_id/void`, {
    config: { access: { permissions: ['token:use'] } },
    schema: { tags, summary: 'Void an authorization not yet captured', params: TransactionParams, response: { 200: TransactionSchema, ...problems(404, ...WRITE) } },
  }, async (request) => presentTransaction(await transactions.void(principalOf(request), request.params.transaction_id)));

  r.post(`${BASE}/:transaction_id/refunds`, {
    config: { access: { permissions: ['token:use'] } },
    schema: {
      tags,
      summary: 'Refund a captured transaction (the whole remaining balance unless amount is given)',
      params: TransactionParams,
      body: RefundBody,
      response: { 201: RefundSchema, ...problems(404, ...WRITE) },
    },
  }, async (request, reply) => reply.code(201).send(presentRefund(await transactions.refunds.create(principalOf(request), request.params.transaction_id, request.body ?? {}, idempotentId(request, 'refund')))));

  r.get(`${BASE}/:transaction_id/refunds`, {
    config: { access: { permissions: ['token:use'] } },
    schema: { tags, summary: 'List a transaction\'s refunds, oldest first (cursor pages)', params: TransactionParams, querystring: ListRefundsQuery, response: { 200: RefundPage, ...problems(404) } },
  }, async (request) => {
    const page = await transactions.refunds.list(principalOf(request), request.params.transaction_id, request.query);
    return { pagination: page.pagination, data: page.data.map(presentRefund) };
  });

  r.get(`${BASE}/:transaction_id/refunds/:refund_id`, {
    config: { access: { permissions: ['token:use'] } },
    schema: { tags, summary: 'Get a refund', params: RefundParams, response: { 200: RefundSchema, ...problems(404) } },
  }, async (request) => presentRefund(await transactions.refunds.get(principalOf(request), request.params.transaction_id, request.params.refund_id)));
}
