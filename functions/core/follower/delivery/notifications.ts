/**
 * What a subscriber is sent (docs/behaviour.md "Subscriptions over WebSocket"): geth's
 * `eth_subscription` notifications, a header for `newHeads`, a log for `logs`, and an error
 * notification when something could not be delivered. A notification that would not fit in
 * one API Gateway message (128 KB) is never cut: the subscriber gets an error notification
 * naming what did not fit instead.
 */

/** API Gateway's largest WebSocket message (its frames are 32 KB; a message up to 128 KB). */
export const MAX_MESSAGE_BYTES = 128 * 1024;
/** API Gateway bills messages in 32 KB increments. */
export const BILLED_MESSAGE_BYTES = 32 * 1024;

/** geth's code for its own errors; an error notification carries it. */
export const DELIVERY_ERROR_CODE = -32000;

/**
 * The members of a block that a `newHeads` header leaves out, as geth's header marshalling
 * does: the body (transactions, uncles, withdrawals) and what is computed from it.
 */
const NOT_IN_HEADER = ["transactions", "uncles", "withdrawals", "size", "totalDifficulty"];

/** A block's header as `newHeads` sends it, from an eth_getBlockByNumber(…, false) answer's block. */
export function headerText(block: Readonly<Record<string, unknown>>): string {
  const header: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(block)) {
    if (!NOT_IN_HEADER.includes(name)) header[name] = value;
  }
  return JSON.stringify(header);
}

/** An `eth_subscription` notification carrying `resultText` (JSON) as its result. */
export function notification(subscription: string, resultText: string): string {
  return `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":${JSON.stringify(subscription)},"result":${resultText}}}`;
}

/** An `eth_subscription` notification carrying an error instead of a result. */
export function errorNotification(subscription: string, message: string): string {
  return JSON.stringify({
    jsonrpc: "2.0",
    method: "eth_subscription",
    params: { subscription, error: { code: DELIVERY_ERROR_CODE, message } },
  });
}

/** What one subscriber is sent about one item: the notification, or the error standing for it. */
export interface Notice {
  readonly text: string;
  /** False when the item did not fit and `text` is the error notification in its place. */
  readonly fits: boolean;
}

/**
 * The notification of `resultText`, or, when it would be over 128 KB, an error notification
 * naming `what` ("the header of block 0x10", "the log 0x2 of block 0x10") and its size.
 */
export function boundedNotification(
  subscription: string,
  resultText: string,
  what: string,
): Notice {
  const text = notification(subscription, resultText);
  const bytes = Buffer.byteLength(text);
  if (bytes <= MAX_MESSAGE_BYTES) return { text, fits: true };
  return {
    text: errorNotification(
      subscription,
      `${what} is ${bytes} bytes as a notification, over the ${MAX_MESSAGE_BYTES} bytes one WebSocket message may carry: it was not sent; read it over HTTP`,
    ),
    fits: false,
  };
}

/** Messages API Gateway bills for one message of this text (32 KB increments). */
export function billedMessages(text: string): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(text) / BILLED_MESSAGE_BYTES));
}

export const hexNumber = (number: number): string => `0x${number.toString(16)}`;
