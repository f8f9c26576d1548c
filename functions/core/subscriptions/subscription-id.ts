/**
 * Subscription ids (docs/behaviour.md "Subscriptions over WebSocket"): `0x` and 128 random
 * bits as 32 hex digits, like geth's, so a connection cannot guess another's subscription.
 */

export const SUBSCRIPTION_ID_RANDOM_BYTES = 16;

const SUBSCRIPTION_ID = /^0x[0-9a-f]{32}$/i;

/** The id made of `random` (16 bytes). */
export function subscriptionIdOf(random: Uint8Array): string {
  if (random.length !== SUBSCRIPTION_ID_RANDOM_BYTES) {
    throw new RangeError(`a subscription id takes ${SUBSCRIPTION_ID_RANDOM_BYTES} random bytes`);
  }
  return `0x${Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("")}`;
}

/** The id in lower case when it has the shape of one of the gateway's, else null. */
export function subscriptionIdFrom(value: unknown): string | null {
  return typeof value === "string" && SUBSCRIPTION_ID.test(value) ? value.toLowerCase() : null;
}
