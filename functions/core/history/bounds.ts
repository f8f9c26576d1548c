import type { ConfiguredBound } from "../config/history-schema.ts";
import type { Provider } from "../config/network-model.ts";
import type { HistoryResource } from "./resources.ts";

/**
 * A provider's availability bounds (docs/behaviour.md §15.1): per resource, the oldest block it
 * keeps, from three sources in this order of trust: the config, what its own answers taught
 * (learned), what the monitor's probe found (probed). The first source that says anything
 * decides; a provider no source says anything about is taken to keep everything.
 */

/** A refusal's lesson: the provider keeps `from` and later, not `refusedAt`. */
export interface LearnedBound {
  readonly from: number;
  /** The block it refused (or that the probe found missing). */
  readonly refusedAt: number;
  /** When it was learned (ms). */
  readonly at: number;
  /** In force until (ms); an expired bound is forgotten. */
  readonly until: number;
}

/** What the monitor's probe found for one resource. */
export interface ProbedResource {
  /** The oldest block kept, or null for a resource the provider does not serve at all. */
  readonly from: number | null;
  /** It keeps a window of this many blocks behind its head (`deleteStrategy: window`). */
  readonly window: number | null;
  /** `capabilities`: its own `eth_capabilities`; `balance`: a state read succeeded there. */
  readonly how: "capabilities" | "balance";
}

/** The monitor's last probe of one provider (one item per provider). */
export interface HistoryProbe {
  readonly at: number;
  /** Whether it answers `eth_capabilities`, as of `capabilitiesAt`. */
  readonly capabilities: "supported" | "unsupported" | "unknown";
  readonly capabilitiesAt: number;
  readonly resources: Readonly<Partial<Record<HistoryResource, ProbedResource>>>;
  /** What the probe saw, in one line. */
  readonly detail: string;
}

/** Everything shared about one provider's history. */
export interface ProviderHistory {
  readonly learned: ReadonlyMap<HistoryResource, LearnedBound>;
  readonly probe: HistoryProbe | null;
}

export const NO_HISTORY: ProviderHistory = { learned: new Map(), probe: null };

export type BoundSource = "config" | "learned" | "probed";

/** The bound routing uses for one provider and resource. */
export interface BoundInForce {
  /** The oldest block kept; Infinity for a resource it does not serve. */
  readonly from: number;
  readonly source: BoundSource;
  /** Why, for the routing explanation and the status route. */
  readonly why: string;
}

export interface BoundContext {
  readonly now: number;
  /** The provider's head as routing sees it (a window moves with it), or null. */
  readonly head: number | null;
  /** How long a probe stands (ms); 0: probes are off and ignored. */
  readonly probeValidMs: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

function windowFrom(blocks: number, head: number | null): number | null {
  return head === null ? null : Math.max(0, head - blocks + 1);
}

function configured(bound: ConfiguredBound, resource: HistoryResource, head: number | null) {
  const fromWindow = bound.blocks === null ? null : windowFrom(bound.blocks, head);
  const candidates = [bound.from, fromWindow].filter((value) => value !== null);
  if (candidates.length === 0) return null;
  const from = Math.max(...candidates);
  const words = [
    bound.from === null ? null : `${resource}_from ${bound.from}`,
    bound.blocks === null ? null : `${resource}_blocks ${bound.blocks}`,
  ].filter((word) => word !== null);
  const why = bound.from === 0 && bound.blocks === null ? "archive" : words.join(", ");
  return { from, source: "config" as const, why: `configured (${why})` };
}

function probed(
  probe: HistoryProbe,
  resource: HistoryResource,
  context: BoundContext,
): BoundInForce | null {
  const found = probe.resources[resource];
  if (found === undefined) return null;
  const when = `probed ${iso(probe.at)}`;
  if (found.from === null) {
    return { from: Infinity, source: "probed", why: `does not serve ${resource} (${when})` };
  }
  const fromWindow = found.window === null ? null : windowFrom(found.window, context.head);
  const from = Math.max(found.from, fromWindow ?? 0);
  const how = found.how === "capabilities" ? "its eth_capabilities" : "a state read there";
  const window = found.window === null ? "" : `, a window of ${found.window} blocks`;
  return { from, source: "probed", why: `${how} says block ${found.from}${window} (${when})` };
}

/** The bound in force for `provider` and `resource`, or null when nothing is known. */
export function boundInForce(
  provider: Provider,
  history: ProviderHistory | undefined,
  resource: HistoryResource,
  context: BoundContext,
): BoundInForce | null {
  const fromConfig = provider.history[resource];
  if (fromConfig !== null) return configured(fromConfig, resource, context.head);
  const learned = history?.learned.get(resource);
  if (learned !== undefined && learned.until > context.now) {
    return {
      from: learned.from,
      source: "learned",
      why: `refused ${resource} at block ${learned.refusedAt} (${iso(learned.at)}), until ${iso(learned.until)}`,
    };
  }
  const probe = history?.probe ?? null;
  if (probe === null || context.probeValidMs <= 0) return null;
  if (context.now - probe.at > context.probeValidMs) return null;
  return probed(probe, resource, context);
}

/** Whether a bound covers `block` (no bound covers everything). */
export function keeps(bound: BoundInForce | null, block: number): boolean {
  return bound === null || block >= bound.from;
}

/**
 * This container's own history next to a fresh read that raced it: per provider and resource
 * the later `from` (a bound only tightens while in force), and the newer probe.
 */
export function mergeHistories(
  local: ReadonlyMap<string, ProviderHistory>,
  fresh: ReadonlyMap<string, ProviderHistory>,
): Map<string, ProviderHistory> {
  const merged = new Map(fresh);
  for (const [provider, mine] of local) {
    const stored = merged.get(provider) ?? NO_HISTORY;
    const learned = new Map(stored.learned);
    for (const [resource, bound] of mine.learned) {
      const other = learned.get(resource);
      if (other === undefined || other.from < bound.from) learned.set(resource, bound);
    }
    const probe =
      stored.probe === null || (mine.probe !== null && mine.probe.at > stored.probe.at)
        ? mine.probe
        : stored.probe;
    merged.set(provider, { learned, probe });
  }
  return merged;
}
