import type { Telemetry } from "../ports.ts";

/**
 * What the guards of docs/behaviour.md §8 refused, counted per network in this container: the
 * status route shows the counts (`guards`), and each refusal is the metric `guard_refusals`
 * (dimensions `network`, `guard`). A guard is named by the config key that bounds it; the
 * fixed rules are named by what they keep: an answer computed from the caller's own input kept
 * out of the shared tier (`cache_callers_answer`), a request's filter calls past
 * `FILTER_CALLS_PER_REQUEST` and its sends past `LEDGER_CLAIMS_PER_REQUEST`.
 */
export const GUARDS = [
  "methods_deny",
  "methods_allow",
  "requests_per_minute",
  "cache_shared_writes_per_request",
  "cache_shared_writes_per_minute",
  "cache_shared_item_bytes",
  "cache_memory_request_bytes",
  "cache_callers_answer",
  "filter_calls_per_request",
  "ledger_claims_per_request",
] as const;

export type Guard = (typeof GUARDS)[number];

export type GuardCountsView = Readonly<Record<Guard, number>>;

/** The network dimension of a refusal on a route that names none (`GET /status`). */
export const ANY_NETWORK = "*";

export class GuardCounts {
  readonly #telemetry: Telemetry;
  readonly #counts = new Map<string, Map<Guard, number>>();

  constructor(telemetry: Telemetry) {
    this.#telemetry = telemetry;
  }

  /** Counts `count` refusals of `guard` on `network`, and says so in the metric. */
  refused(network: string, guard: Guard, count = 1): void {
    let counts = this.#counts.get(network);
    if (counts === undefined) {
      counts = new Map();
      this.#counts.set(network, counts);
    }
    counts.set(guard, (counts.get(guard) ?? 0) + count);
    this.#telemetry.count("guard_refusals", { network, guard }, count);
  }

  /** This container's refusals on `network`, every guard listed (0 for none). */
  counts(network: string): GuardCountsView {
    const counts = this.#counts.get(network);
    return Object.fromEntries(
      GUARDS.map((guard) => [guard, counts?.get(guard) ?? 0]),
    ) as GuardCountsView;
  }
}
