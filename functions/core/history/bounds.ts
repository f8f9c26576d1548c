import type { ConfiguredBound } from "../config/history-schema.ts";
import type { Provider } from "../config/network-model.ts";
import type { HistoryResource } from "./resources.ts";

/**
 * A provider's availability bounds (docs/behaviour.md §16.1): per resource, the oldest block it
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

/**
 * What routing knows of one provider and resource: blocks below `from` it does not keep, and is
 * never asked for; blocks from `from` up to below `likelyFrom` it likely does not keep, and is
 * asked only after every provider that may (a full node that refused an older block keeps some
 * window of recent blocks, where its edge is is unknown until the probe finds it, §16.2).
 */
export interface HistoryBound {
  /** The oldest block kept; 0 when nothing says it lacks any; Infinity: it serves none. */
  readonly from: number;
  /** Who says so, or null when nothing does (`from` is 0). */
  readonly source: BoundSource | null;
  readonly why: string | null;
  /** Asked last below this block (≥ `from`); equal to `from` when there is no doubt. */
  readonly likelyFrom: number;
  readonly likelyWhy: string | null;
}

/** Where a provider stands for one call's block. */
export type Keeping =
  | { readonly kind: "keeps" }
  | { readonly kind: "lacks"; readonly bound: HistoryBound }
  | { readonly kind: "doubt"; readonly bound: HistoryBound };

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
  return { from, why: `configured (${why})` };
}

/** What a fresh probe found: a claim (its eth_capabilities), or a block a state read proved. */
function probed(
  history: ProviderHistory | undefined,
  resource: HistoryResource,
  context: BoundContext,
): { from: number; claim: boolean; at: number; why: string } | null {
  const probe = history?.probe ?? null;
  if (probe === null || context.probeValidMs <= 0) return null;
  if (context.now - probe.at > context.probeValidMs) return null;
  const found = probe.resources[resource];
  if (found === undefined) return null;
  const when = `probed ${iso(probe.at)}`;
  if (found.from === null) {
    return { from: Infinity, claim: true, at: probe.at, why: `serves no ${resource} (${when})` };
  }
  const fromWindow = found.window === null ? null : windowFrom(found.window, context.head);
  const from = Math.max(found.from, fromWindow ?? 0);
  const window = found.window === null ? "" : `, a window of ${found.window} blocks`;
  return found.how === "capabilities"
    ? {
        from,
        claim: true,
        at: probe.at,
        why: `its eth_capabilities says block ${found.from}${window} (${when})`,
      }
    : { from, claim: false, at: probe.at, why: `a state read at block ${from} served (${when})` };
}

/** Whether a lesson carries the provider's own word on its oldest block (reth, Erigon, dRPC). */
const named = (lesson: LearnedBound) => lesson.from > lesson.refusedAt + 1;

/**
 * The bound routing uses for `provider` and `resource`, from the config, its own refusals
 * (learned) and the monitor's probe (probed). The config says what the provider keeps and no
 * probe overrides it, but a refusal in force makes the configured claim doubtful: the provider
 * is asked last for those blocks, never left out, since the operator said it keeps them. With
 * no config, a refusal at block B leaves out B and older; the blocks above it, up to the recent
 * ones every node keeps, are doubtful until the provider's words name its oldest block or the
 * probe finds its edge. A claim of its `eth_capabilities` leaves out what it says it lacks.
 */
export function historyBound(
  provider: Provider,
  history: ProviderHistory | undefined,
  resource: HistoryResource,
  context: BoundContext,
  recentBlocks: number,
): HistoryBound {
  const lesson = history?.learned.get(resource);
  const refused = lesson !== undefined && lesson.until > context.now ? lesson : null;
  const refusedWhy =
    refused === null
      ? null
      : `refused ${resource} at block ${refused.refusedAt} (${iso(refused.at)}), until ${iso(refused.until)}`;
  const fromConfig = provider.history[resource];
  const config = fromConfig === null ? null : configured(fromConfig, resource, context.head);
  if (config !== null) {
    const doubt = refused !== null && refused.from > config.from;
    return {
      from: config.from,
      source: "config",
      why: config.why,
      likelyFrom: doubt ? refused.from : config.from,
      likelyWhy: doubt ? `${refusedWhy}, though ${config.why}` : null,
    };
  }
  const probe = probed(history, resource, context);
  // Every node keeps the recent blocks: a provider's word (a named oldest block, a capability
  // claim) never leaves them out, so one bogus answer cannot refuse recent calls unasked.
  const recent = context.head === null ? Infinity : Math.max(0, context.head - recentBlocks + 1);
  const claimFrom = Math.min(probe?.claim === true ? probe.from : 0, recent);
  const learnedFrom = Math.min(refused?.from ?? 0, recent);
  const from = Math.max(claimFrom, learnedFrom);
  const source: BoundSource | null =
    from === 0 ? null : learnedFrom >= claimFrom ? "learned" : "probed";
  const why = source === "learned" ? refusedWhy : source === "probed" ? (probe?.why ?? null) : null;
  // The window a refusal that named no oldest block leaves in doubt, unless a later probe
  // proved where the provider's state starts.
  let likelyFrom = from;
  let likelyWhy: string | null = null;
  if (refused !== null && !named(refused) && context.head !== null) {
    const proved = probe !== null && !probe.claim && probe.at >= refused.at ? probe.from : Infinity;
    likelyFrom = Math.max(from, Math.min(proved, recent));
    if (likelyFrom > from) {
      likelyWhy = `${refusedWhy}: likely keeps only recent ${resource}, its oldest block unknown`;
    }
  }
  return { from, source, why, likelyFrom, likelyWhy };
}

/** Where a bound puts `block`. */
export function keepingAt(bound: HistoryBound, block: number): Keeping {
  if (block < bound.from) return { kind: "lacks", bound };
  if (block < bound.likelyFrom) return { kind: "doubt", bound };
  return { kind: "keeps" };
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
