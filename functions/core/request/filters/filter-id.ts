/**
 * The ids of filters the gateway holds (docs/behaviour.md §14): `0x`, a slot of four hex
 * digits (where the filter is stored among its owner's), then 128 random bits as 32 hex
 * digits, like geth's ids. Nodes write theirs in at most 32 hex digits (geth, anvil, besu and
 * reth a random 128-bit number, erigon 64 bits, nethermind a counter), so an id of 36 hex
 * digits is never a provider's: a `eth_newPendingTransactionFilter` id still goes upstream.
 */

const GATEWAY_FILTER_ID = /^0x[0-9a-f]{36}$/i;

/** Slots one owner may have (four hex digits); `max_filters_per_key` stays under it. */
export const FILTER_SLOTS = 0x10000;

/** Random bytes in an id: 128 bits, so a caller cannot poll a filter it was not given. */
export const FILTER_ID_RANDOM_BYTES = 16;

/** The id of the filter in `slot`, with `random` (16 bytes) as its secret part. */
export function filterIdOf(slot: number, random: Uint8Array): string {
  if (!Number.isInteger(slot) || slot < 0 || slot >= FILTER_SLOTS) {
    throw new RangeError(`filter slot ${slot} is outside 0..${FILTER_SLOTS - 1}`);
  }
  if (random.length !== FILTER_ID_RANDOM_BYTES) {
    throw new RangeError(`a filter id takes ${FILTER_ID_RANDOM_BYTES} random bytes`);
  }
  const secret = Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `0x${slot.toString(16).padStart(4, "0")}${secret}`;
}

/** The id in lower case when it is one of the gateway's, else null (a provider's, or junk). */
export function gatewayFilterId(id: unknown): string | null {
  return typeof id === "string" && GATEWAY_FILTER_ID.test(id) ? id.toLowerCase() : null;
}

/** The slot a gateway filter id names (the id as `gatewayFilterId` gives it). */
export function slotOfFilterId(id: string): number {
  return Number.parseInt(id.slice(2, 6), 16);
}
