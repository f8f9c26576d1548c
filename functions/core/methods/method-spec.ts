/**
 * What the gateway knows about one JSON-RPC method (docs/behaviour.md §9): where its block
 * parameter sits, what its answer is keyed by, whether it is safe to repeat, how heavy it is,
 * how long its answer stays true, and what a valid result looks like.
 */

export type BlockTag = "latest" | "safe" | "finalized" | "earliest" | "pending";

/**
 * Where a call names its block, and what it may name there. `whenOmitted` is the tag a node
 * assumes for an optional block parameter that is left out; without it the parameter is
 * required. Every position that takes a number or a tag also takes an EIP-1898 object
 * (`{blockNumber}` or `{blockHash, requireCanonical}`).
 */
export type BlockParam =
  | { readonly kind: "none" }
  | { readonly kind: "number-or-tag"; readonly at: number; readonly whenOmitted?: BlockTag }
  /** A number, a tag, or a bare block hash. */
  | { readonly kind: "number-tag-or-hash"; readonly at: number; readonly whenOmitted?: BlockTag }
  | { readonly kind: "hash"; readonly at: number }
  /** A log filter object: `blockHash`, or `fromBlock` / `toBlock` (absent means "latest"). */
  | { readonly kind: "filter"; readonly at: number };

/**
 * How long an answer stays true:
 * - `static`: never changes on this network;
 * - `by-block`: depends only on the block the block parameter names;
 * - `by-hash`: looked up by a transaction or block hash; true once the block holding it is
 *   final, while a `null` (not found yet) is not;
 * - `realtime`: about the chain's tip, true for about a block time;
 * - `never`: not to be cached (writes, node-local state, filters, the pending block, and
 *   answers that differ by provider).
 */
export type CacheClass = "static" | "by-block" | "by-hash" | "realtime" | "never";

export type ResultShape = "quantity" | "data" | "version" | "array" | "object";

/**
 * When `null` is a valid answer: `never`; `always` (a receipt of a pending transaction, an
 * unknown hash); or `unsettled-block`, when the block the call names may not exist yet (a
 * number above the quorum head, "pending", a block hash).
 */
export type NullWhen = "never" | "always" | "unsettled-block";

/** What a provider's `result` must look like; a method without one accepts any result. */
export interface ResultRule {
  readonly shape: ResultShape;
  readonly nullWhen: NullWhen;
}

export interface MethodSpec {
  readonly block: BlockParam;
  /** The answer is looked up by a transaction hash or a block hash. */
  readonly hashKeyed: "tx" | "block" | null;
  /** Safe to send again, to this or another provider: it changes nothing. */
  readonly idempotent: boolean;
  /** `heavy`: re-executes transactions or scans many blocks, so slowness is expected. */
  readonly weight: "light" | "heavy";
  readonly cache: CacheClass;
  readonly result: ResultRule | null;
  /** Re-executes a block already mined: a failed pre-check there means the node's state is wrong. */
  readonly tracesMinedBlock: boolean;
  /**
   * Runs code the caller wrote or chose (a call, a simulation, a JS tracer): an error the
   * node cannot classify is the code's far more often than the node's.
   */
  readonly runsCallersCode: boolean;
}
