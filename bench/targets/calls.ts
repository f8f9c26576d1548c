/**
 * The JSON-RPC calls the bench sends. What a target measures depends on which work the
 * gateway does for the call: the served head answers `eth_blockNumber` without a provider, and
 * the answer cache answers a repeated read, so the pipeline's cost is judged on a call the
 * gateway forwards every time.
 */

export interface Workload {
  readonly name: string;
  /** The body; when `varies`, `{address}` in it stands for a new address on every call. */
  readonly body: string;
  readonly varies: boolean;
  /** The gateway sends every call of it to a provider (the bench checks it before measuring). */
  readonly forwarded: boolean;
}

export const ADDRESS_MARKER = "{address}";

/**
 * The call the pipeline's cost is judged on: a balance at `latest`, as a wallet asks for its
 * users' addresses. `latest` is pinned to the served head and the answer is kept in memory
 * for about a block time (docs/behaviour.md §11), so one address asked twice would be a hit:
 * each call names a new address, and every call misses the cache and goes to the provider.
 */
export const FORWARDED: Workload = {
  name: "eth_getBalance, a new address each call (forwarded)",
  body: `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x${ADDRESS_MARKER}","latest"]}`,
  varies: true,
  forwarded: true,
};

/** A nonce at `pending`, as a wallet asks before a send: never kept by the answer cache. */
export const PENDING_NONCE: Workload = {
  name: "eth_getTransactionCount at pending (forwarded)",
  body: '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionCount","params":["0x00000000000000000000000000000000000000aa","pending"]}',
  varies: false,
  forwarded: true,
};

/** Answered by the served head without a provider on a live chain: the pipeline's short path. */
export const SERVED_HEAD: Workload = {
  name: "eth_blockNumber (served head)",
  body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
  varies: false,
  forwarded: false,
};

/**
 * Call `sequence` of a run whose addresses start with `seed` (24 hex digits, drawn per run):
 * the address is the seed and the sequence number in 16 hex digits, so no two calls of a run,
 * nor of two runs, name the same one. The load generator's script and the Lambda child build
 * the same addresses the same way.
 */
export function bodyOf(workload: Workload, seed: string, sequence: number): string {
  if (!workload.varies) return workload.body;
  return workload.body.replace(ADDRESS_MARKER, `${seed}${sequence.toString(16).padStart(16, "0")}`);
}
