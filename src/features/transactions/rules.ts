/**
 * The rules of the spec's use-case table (SPEC.md "Transaction"), checked after the body's shape
 * and before anything is read or created. Each is documented in docs/orchestration.md
 * ("Creating a transaction").
 *
 * | Case                          | merchant_initiated | payment_source | is_subsequent_payment | previous_scheme_transaction_id |
 * | First transaction             | false              | ecommerce      | false                 | —                              |
 * | Card on file (express)        | false              | card_on_file   | false                 | —                              |
 * | Subscription after the first  | true               | recurring      | true                  | required                       |
 * | Consumption-based             | true               | card_on_file   | false                 | required                       |
 */
import { FieldErrorList } from '../../http/errors.ts';
import type { CreateTransactionInput } from './schema.ts';

export function checkUseCase(body: CreateTransactionInput): void {
  const errors = new FieldErrorList();
  const mit = body.merchant_initiated ?? false;
  const source = body.payment_source ?? 'ecommerce';
  const subsequent = body.is_subsequent_payment ?? false;
  const previous = body.previous_scheme_transaction_id ?? null;

  if ((body.token === undefined) === (body.token_intent_id === undefined)) {
    errors.add(body.token === undefined ? 'body.token' : 'body.token_intent_id', 'give exactly one of token (a card or network token) and token_intent_id');
  }
  if (mit && source === 'ecommerce') {
    errors.add('body.payment_source', 'a merchant-initiated transaction is recurring or card_on_file, not ecommerce (the buyer is not present)');
  }
  if (mit && previous === null) {
    errors.add('body.previous_scheme_transaction_id', 'a merchant-initiated transaction needs the scheme_transaction_id of the first, customer-initiated, transaction of the card');
  }
  if (mit && source === 'recurring' && !subsequent) {
    errors.add('body.is_subsequent_payment', 'a merchant-initiated recurring payment follows a first one: set is_subsequent_payment to true');
  }
  if (subsequent && source === 'ecommerce') {
    errors.add('body.payment_source', 'a subsequent payment is recurring or card_on_file, not ecommerce');
  }
  if (subsequent && previous === null) {
    errors.add('body.previous_scheme_transaction_id', 'a subsequent payment needs the scheme_transaction_id of the first payment of the series');
  }
  if (!mit && !subsequent && previous !== null) {
    errors.add('body.previous_scheme_transaction_id', 'only a merchant-initiated or subsequent payment refers to a previous transaction');
  }
  if (mit && body.three_d_session_id) {
    errors.add('body.three_d_session_id', 'a merchant-initiated transaction has no buyer present to authenticate: 3DS does not apply');
  }
  errors.throwIfAny();
}
