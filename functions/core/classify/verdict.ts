/**
 * What one upstream attempt ended in (docs/behaviour.md §4). Shared by the classifier, which produces
 * verdicts, and the gateway and health model, which act on them.
 */

/** The `kind` label of the `retried_errors` metric. */
export type RetryKind =
  | "rate_limit"
  | "transient"
  | "no_result"
  | "internal"
  | "timeout"
  | "http"
  | "connection"
  | "capability";

/** Why a provider is blacklisted; each has a base cooldown in `cooldown_seconds`. */
export type CooldownReason =
  | "rate_limit"
  | "quota"
  | "timeout"
  | "connection"
  | "tls"
  | "batch_limit"
  | "transient"
  | "slow"
  | "force_rotate"
  | "forbidden"
  | "redirect"
  | "chain_unavailable"
  | "wrong_chain"
  | "capability"
  /** In the minority of a read consensus (docs/behaviour.md §17.4). */
  | "inconsistent";

export type Verdict =
  /** A result, or an error that is the caller's fault: returned as is; resets strikes. */
  | { readonly outcome: "ok" }
  /**
   * An error that is neither the caller's fault nor known to be transient: returned as is,
   * and counted toward force-rotate (`force_rotate_errors` in a row).
   */
  | { readonly outcome: "unclassified"; readonly detail: string }
  /** Try the next candidate; blacklist this provider for `reason`. */
  | {
      readonly outcome: "retry";
      readonly kind: RetryKind;
      readonly reason: CooldownReason;
      readonly detail: string;
      /** The cooldown the provider asked for (`Retry-After`), when it gave one. */
      readonly retryAfterMs?: number;
    }
  /** Try the next candidate; blacklist this provider for this method only. */
  | { readonly outcome: "capability"; readonly detail: string }
  /**
   * The provider has not reached the block asked about (a null for a block the served head
   * covers, "header not found", an `eth_blockNumber` under the served head): try the next
   * candidate; no strike, since being behind is not being broken.
   */
  | {
      readonly outcome: "behind";
      readonly detail: string;
      /** A hash the provider does not know: behind only if another provider's answer found it. */
      readonly unknownHash?: true;
    }
  /**
   * A configured `inner_errors` substring, or a filter this provider does not hold: next
   * candidate while attempts remain, else the answer as is; no penalty.
   */
  | { readonly outcome: "inner_error"; readonly detail: string }
  /**
   * The provider no longer keeps (or never kept) what the call is about: state, a body,
   * receipts or logs of an old block (docs/behaviour.md §16). Next candidate, no penalty of any
   * kind; it teaches the provider's bound. `oldest`: the oldest block the answer says it keeps.
   */
  | { readonly outcome: "pruned"; readonly detail: string; readonly oldest?: number };

/** A failure below HTTP: no status line was received (or the body could not be read). */
export interface TransportFailure {
  readonly kind: "timeout" | "connection" | "tls";
  readonly message: string;
}

/** One call of a request, as the classifier needs to judge its answer. */
export interface CallInfo {
  readonly method: string;
  readonly params: unknown;
}

export interface ClassifyContext {
  /**
   * The highest block known to exist (the served head, or the quorum's): a provider's null for
   * a block at or below it, or an `eth_blockNumber` more than `headToleranceBlocks` under it,
   * is `behind`.
   */
  readonly quorumHead: number | null;
  /** How far under `quorumHead` an `eth_blockNumber` answer may be before it is `behind`. */
  readonly headToleranceBlocks?: number;
  /** The network's chain id: an `eth_chainId` answer naming another chain is a wrong answer. */
  readonly chainId?: number;
}
