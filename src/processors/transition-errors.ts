/**
 * The errors of the state machine (transitions.ts): the features layer maps IllegalTransitionError
 * to 409 and AmountError to 400, and shows their messages, which name the status or the bound.
 */
const VERBS: Record<string, string> = {
  authorize_result: 'record an authorization on', capture: 'capture', void: 'void', settle: 'settle', approval_expire: 'expire the approval of',
  approval_fail: 'fail the approval of', refund: 'refund', refund_update: 'update a refund of',
};

/** An action the current status does not allow. The features layer answers 409; the message names the status. */
export class IllegalTransitionError extends Error {
  readonly code = 'illegal_transition';
  readonly status: string;
  readonly action: string;

  constructor(action: string, status: string, detail?: string) {
    super(detail ?? `cannot ${VERBS[action] ?? action} a transaction whose status is ${status}`);
    this.name = 'IllegalTransitionError';
    this.status = status;
    this.action = action;
  }
}

/** An amount out of bounds (zero, negative, above what is authorized or left to refund). The features layer answers 400. */
export class AmountError extends Error {
  readonly code = 'invalid_amount';
  /** The bound the amount broke: the authorized amount or the remaining balance; undefined for "not a positive integer". */
  readonly limit: number | undefined;

  constructor(message: string, limit?: number) {
    super(message);
    this.name = 'AmountError';
    this.limit = limit;
  }
}
