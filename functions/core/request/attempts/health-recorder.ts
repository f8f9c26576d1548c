import type { CooldownReason, Verdict } from "../../classify/verdict.ts";
import type { Network, Provider } from "../../config/network-model.ts";
import {
  applyIncident,
  applySuccess,
  cooldownPolicy,
  type ProviderHealth,
} from "../../health/health.ts";
import {
  HEALTH_WRITE_ROUNDS,
  HEALTH_WRITE_WAIT_MS,
  SLOW_RULE_MIN_CANDIDATES,
} from "../../policies.ts";
import type { StateStore, Telemetry, Wait } from "../../ports.ts";
import { healthOf } from "../../routing/network-state.ts";
import { PLAIN_READ, type SelectionContext, whyNotCandidate } from "../../routing/selection.ts";
import type { StateCache } from "../../routing/state-cache.ts";
import { type EventKind, type EventSink, makeEvent } from "../../status/events.ts";
import type { AttemptRecord, FailureVerdict } from "../vocabulary.ts";

export interface HealthRecorderDeps {
  readonly store: StateStore;
  readonly cache: StateCache;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  /** Removes secrets from text that may leave the process (upstream error details). */
  readonly scrub: (text: string) => string;
  /** Called with each attempt's outcome, for request stats (failing often, latency). */
  readonly recordOutcome?: (
    network: string,
    provider: string,
    ok: boolean,
    latencyMs: number,
  ) => void;
  /**
   * Where blacklists, capability blacklists and force-rotations are recorded as events: only
   * on these failure paths, which write state anyway, never on a healthy request's path.
   */
  readonly events?: EventSink;
}

/**
 * What attempts do to providers (docs/behaviour.md §4, §6): a failure is an incident (one
 * strike, agreed across containers by a compare-and-set write) or a per-method capability
 * blacklist; a success resets strikes, may be too slow (the slow rule), and unclassified
 * errors in a row rotate traffic away (force-rotate). Emergency attempts penalise nobody.
 */
export class HealthRecorder {
  readonly #deps: HealthRecorderDeps;
  /** Unclassified errors in a row per provider (force-rotate), this container only. */
  readonly #unclassifiedInARow = new Map<string, number>();
  /** Providers rotated away from in this container, until (ms). */
  readonly #demotedUntil = new Map<string, number>();
  /** When each provider last gave this container an answer (ms). */
  readonly #lastSuccessAt = new Map<string, number>();

  constructor(deps: HealthRecorderDeps) {
    this.#deps = deps;
  }

  /** Providers of the network this container has rotated away from at `now`. */
  demoted(network: Network, now: number): Set<string> {
    const demoted = new Set<string>();
    for (const provider of network.providers) {
      const until = this.#demotedUntil.get(key(network.name, provider.name));
      if (until !== undefined && until > now) demoted.add(provider.name);
    }
    return demoted;
  }

  /** When the provider last answered a call in this container, if it did. */
  lastSuccessAt(network: Network, provider: string): number | undefined {
    return this.#lastSuccessAt.get(key(network.name, provider));
  }

  /**
   * The provider failed calls and the next provider takes them: counted and logged at once.
   * The penalty waits until the request is over (`penalise`), when it is known whether the
   * call failed everywhere the same way.
   */
  noteFailure(attempt: AttemptRecord, verdict: FailureVerdict): void {
    // History it no longer keeps is no failure: counted and logged where the bound is learned.
    if (verdict.outcome === "pruned") return;
    const { network, slot } = attempt;
    const provider = slot.provider;
    const kind = verdict.outcome === "retry" ? verdict.kind : verdict.outcome;
    // Behind counts only once the request shows another provider had the block (`penalise`):
    // counted at once, a served head above the chain (a revert) would have every provider
    // "failing often" and out of the quorum.
    if (verdict.outcome !== "behind") {
      this.#deps.recordOutcome?.(network.name, provider.name, false, attempt.elapsedMs);
    }
    this.#deps.telemetry.count("retried_errors", {
      network: network.name,
      provider: provider.name,
      kind,
    });
    this.#deps.telemetry.log("info", "failover: upstream error, trying the next provider", {
      network: network.name,
      provider: provider.name,
      kind,
      detail: this.#deps.scrub(verdict.detail),
      emergency: slot.emergency,
    });
  }

  /** Penalises the provider for failing calls of `methods`; emergency attempts penalise nobody. */
  penalise(attempt: AttemptRecord, verdict: FailureVerdict, methods: readonly string[]): void {
    const { network, slot } = attempt;
    const provider = slot.provider;
    // History it no longer keeps is no fault: no strike, no blacklist, no count (§16.4).
    if (verdict.outcome === "pruned") return;
    if (verdict.outcome === "behind") {
      // Another provider answered about the block: a failed request ("failing often"), so one
      // that is behind on every call while passing the monitor's checks leaves the quorum. No
      // strike: behind is not broken.
      this.#deps.recordOutcome?.(network.name, provider.name, false, attempt.elapsedMs);
      return;
    }
    if (slot.emergency) return;
    if (verdict.outcome === "capability") {
      const now = this.#deps.clock();
      const until = now + network.settings.cooldown_seconds.capability * 1000;
      const current = attempt.context.state.capabilities.get(provider.name) ?? new Map();
      const live = [...current.values()].filter((expiry) => expiry > now).length;
      const fresh = [...new Set(methods)].filter((method) => !((current.get(method) ?? 0) > now));
      // Bounded, so the state every container reads stays small whatever callers send.
      const room = Math.max(0, network.settings.max_capability_blacklists - live);
      for (const method of fresh.slice(0, room)) {
        attempt.writes.push(
          this.#blacklistCapability(network, provider, method, until, verdict.detail),
        );
      }
      if (fresh.length > room) {
        this.#deps.telemetry.log("warn", "capability blacklists at their bound: not recorded", {
          network: network.name,
          provider: provider.name,
          bound: network.settings.max_capability_blacklists,
          methods: fresh.slice(room, room + 10),
        });
      }
      return;
    }
    attempt.writes.push(
      this.incident(network, provider, verdict.reason, verdict.detail, verdict.retryAfterMs),
    );
  }

  /** The provider gave an answer the caller gets. */
  succeeded(attempt: AttemptRecord, verdict: Verdict): void {
    const { network, context } = attempt;
    const provider = attempt.slot.provider;
    this.#deps.recordOutcome?.(network.name, provider.name, true, attempt.elapsedMs);
    const counterKey = key(network.name, provider.name);
    this.#lastSuccessAt.set(counterKey, this.#deps.clock());
    if (verdict.outcome === "unclassified") {
      if (attempt.callersCodeOnly) return;
      const inARow = (this.#unclassifiedInARow.get(counterKey) ?? 0) + 1;
      if (inARow >= network.settings.force_rotate_errors) {
        this.#unclassifiedInARow.delete(counterKey);
        this.#forceRotate(attempt);
      } else {
        this.#unclassifiedInARow.set(counterKey, inARow);
      }
      return;
    }
    this.#unclassifiedInARow.delete(counterKey);
    const health = healthOf(context.state, provider.name);
    const reset = applySuccess(health, this.#deps.clock());
    if (reset) attempt.writes.push(this.#write(network, provider, health, reset));
    const slow = !attempt.heavy && attempt.elapsedMs > network.settings.slow_response_ms;
    if (slow && plainReadCandidates(network, context) >= SLOW_RULE_MIN_CANDIDATES) {
      const detail = `answered in ${attempt.elapsedMs} ms, over slow_response_ms ${network.settings.slow_response_ms}`;
      attempt.writes.push(this.incident(network, provider, "slow", detail));
    }
  }

  #forceRotate(attempt: AttemptRecord): void {
    const { network } = attempt;
    const provider = attempt.slot.provider;
    const settings = network.settings;
    this.#deps.telemetry.log("warn", "force-rotate: unclassified errors in a row", {
      network: network.name,
      provider: provider.name,
      errors: settings.force_rotate_errors,
    });
    const detail = `${settings.force_rotate_errors} unclassified errors in a row`;
    if (network.providers.some((candidate) => candidate.backup)) {
      attempt.writes.push(this.incident(network, provider, "force_rotate", detail));
    } else {
      const until = this.#deps.clock() + settings.cooldown_seconds.force_rotate * 1000;
      this.#demotedUntil.set(key(network.name, provider.name), until);
      this.#record(
        network,
        provider,
        "force_rotated",
        "force_rotate",
        `${detail}: demoted in this container until ${new Date(until).toISOString()}`,
      );
    }
  }

  async #blacklistCapability(
    network: Network,
    provider: Provider,
    method: string,
    until: number,
    detail: string,
  ): Promise<void> {
    this.#deps.cache.update(network.name, (state) => {
      const capabilities = new Map(state.capabilities);
      const methods = new Map(capabilities.get(provider.name) ?? []);
      methods.set(method, Math.max(until, methods.get(method) ?? 0));
      capabilities.set(provider.name, methods);
      return { ...state, capabilities };
    });
    this.#deps.telemetry.count("blacklist_events", {
      network: network.name,
      provider: provider.name,
      reason: "capability",
    });
    try {
      await this.#deps.store.blacklistCapability(network.name, provider.name, method, until);
    } catch (error) {
      this.#storeError(network, error);
      return;
    }
    this.#record(
      network,
      provider,
      "capability_blacklisted",
      "capability",
      `${method} until ${new Date(until).toISOString()}: ${detail}`,
    );
  }

  /**
   * One strike per incident, agreed across containers: the write is conditional on the
   * version this container read; on a conflict the stored item is judged again. `also`
   * changes more of the item in the same write (from the incident's health, or the health
   * read when the incident changes nothing), whatever the incident did (a read consensus's
   * minority record, docs/behaviour.md §17.4). Resolves to whether a write was made.
   */
  async incident(
    network: Network,
    provider: Provider,
    reason: CooldownReason,
    detail: string,
    requestedMs?: number,
    also?: (next: ProviderHealth, read: ProviderHealth) => ProviderHealth,
  ): Promise<boolean> {
    const policy = cooldownPolicy(network.settings);
    const state = await this.#deps.cache.get(network.name);
    let health = healthOf(state, provider.name);
    for (let round = 0; round < HEALTH_WRITE_ROUNDS; round++) {
      const incident = applyIncident(health, reason, this.#deps.clock(), policy, requestedMs);
      const next = also === undefined ? incident : also(incident ?? health, health);
      if (next === null) return false;
      const outcome = await this.#write(network, provider, health, next);
      if (outcome === "written" && incident === null) return true;
      if (outcome === "written") {
        const newStrike = next.strikes > health.strikes;
        this.#deps.telemetry.count("blacklist_events", {
          network: network.name,
          provider: provider.name,
          reason,
        });
        this.#deps.telemetry.log(newStrike ? "warn" : "info", "provider blacklisted", {
          network: network.name,
          provider: provider.name,
          reason,
          strikes: next.strikes,
          until: new Date(next.blacklistedUntil).toISOString(),
          cooldown_ms: next.blacklistedUntil - this.#deps.clock(),
          extended_only: !newStrike,
        });
        const until = new Date(next.blacklistedUntil).toISOString();
        this.#record(
          network,
          provider,
          reason === "force_rotate" ? "force_rotated" : "blacklisted",
          reason,
          newStrike
            ? `${detail}; strike ${next.strikes}, until ${until}`
            : `${detail}; extended to ${until} (strike ${next.strikes})`,
        );
        return true;
      }
      if (outcome === "failed") return false;
      health = outcome;
    }
    return false;
  }

  /** Writes health; returns the stored item when another container won the race. */
  async #write(
    network: Network,
    provider: Provider,
    expected: ProviderHealth,
    next: ProviderHealth,
  ): Promise<"written" | "failed" | ProviderHealth> {
    const apply = (health: ProviderHealth) =>
      this.#deps.cache.update(network.name, (state) => {
        const providers = new Map(state.providers);
        providers.set(provider.name, health);
        return { ...state, providers };
      });
    // This container acts on its own verdict at once, however slow the store is to agree.
    apply(next);
    try {
      const outcome = await this.#deps.store.writeHealth(
        network.name,
        provider.name,
        expected.version,
        next,
      );
      if (outcome.written) return "written";
      apply(outcome.current);
      return outcome.current;
    } catch (error) {
      // The store is down: the local copy stands (fail open, locally).
      this.#storeError(network, error);
      return "failed";
    }
  }

  /** An event beside the state write that caused it; the request never waits for it. */
  #record(
    network: Network,
    provider: Provider,
    kind: EventKind,
    reason: string,
    detail: string,
  ): void {
    this.#deps.events?.record(
      makeEvent(
        {
          network: network.name,
          at: this.#deps.clock(),
          provider: provider.name,
          kind,
          reason,
          detail,
        },
        this.#deps.scrub,
      ),
    );
  }

  #storeError(network: Network, error: unknown): void {
    this.#deps.telemetry.log("warn", "state store write failed: kept locally", {
      network: network.name,
      error: error instanceof Error ? error.message : String(error),
    });
    this.#deps.telemetry.count("state_store_errors", { network: network.name });
  }
}

/** Providers a plain read could go to now; the slow rule needs enough of them. */
function plainReadCandidates(network: Network, context: SelectionContext): number {
  return network.providers.filter(
    (provider) => whyNotCandidate(provider, PLAIN_READ, context) === null,
  ).length;
}

function key(network: string, provider: string): string {
  return `${network}\u0000${provider}`;
}

/**
 * Lets this request's state writes finish before the answer (a frozen Lambda may not finish
 * them later), but never waits long on a slow or throttled store: they go on in the background.
 */
export async function settleWrites(writes: readonly Promise<unknown>[], wait: Wait): Promise<void> {
  if (writes.length === 0) return;
  // Writes done first cut the wait short, so no timer outlives the request.
  const settled = new AbortController();
  await Promise.race([
    Promise.allSettled(writes).then(() => settled.abort()),
    wait(HEALTH_WRITE_WAIT_MS, settled.signal),
  ]);
}
