import type { BlockPosition, ChainHead } from "../chain/chain-head.ts";
import {
  type CheckMemory,
  computeQuorum,
  type HeadCheck,
  needsChainIdCheck,
} from "../chain/quorum.ts";
import type { Network } from "../config/network-model.ts";
import { type RequestStats, windowsOf } from "../health/request-stats.ts";
import type { Telemetry, Upstream } from "../ports.ts";
import type { HeadInfo, QuorumSnapshot } from "../routing/network-state.ts";
import {
  type EventSink,
  type GatewayEvent,
  headStallEvent,
  makeEvent,
  type ObservedHead,
  quorumTransitions,
} from "../status/events.ts";
import type { MonitorStore } from "./monitor-ports.ts";
import {
  blockAt,
  type CallOptions,
  chainIdOf,
  type LatestBlock,
  latestBlock,
} from "./upstream-calls.ts";

/**
 * One network's head-block quorum check (docs/behaviour.md §5): every provider asked at once, the verdict
 * from the pure `computeQuorum`, and the snapshot published for the proxy.
 *
 * Each provider is also asked for its block at the height recorded as `finalized`, every tick,
 * so a provider on another fork is out within one check interval. It is a lone call beside the
 * head's, not a batch with it: some providers refuse batches, and a refusal would cost the head
 * check too; providers bill per call either way, and the two run in parallel.
 */

export interface QuorumCheckDeps {
  readonly upstream: Upstream;
  readonly monitorStore: Pick<MonitorStore, "writeCheckMemory" | "writeQuorum">;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly scrub: (text: string) => string;
  /** Where exclusions, rejoins and head stalls are recorded. */
  readonly events?: EventSink;
}

export interface QuorumCheckInput {
  readonly network: Network;
  /** The snapshot in force before this check, to report membership changes against. */
  readonly previous: QuorumSnapshot | null;
  readonly memory: Readonly<Record<string, CheckMemory>>;
  /** Proxied traffic, for "failing often". */
  readonly requestStats: RequestStats;
  /** The chain position recorded by the previous tick: its `finalized` block is asked of everyone. */
  readonly chainHead?: ChainHead | null;
}

export interface QuorumCheckResult {
  readonly snapshot: QuorumSnapshot;
  /**
   * Providers whose block at the recorded finalized height is the most common one: the head
   * check reads the chain's finality from them first.
   */
  readonly finalizedMajority: readonly string[];
}

interface ProviderCheck {
  readonly check: HeadCheck;
  /** The provider's block at the recorded finalized height; undefined when not asked. */
  readonly finalized: LatestBlock | undefined;
}

export async function runQuorumCheck(
  deps: QuorumCheckDeps,
  input: QuorumCheckInput,
): Promise<QuorumCheckResult> {
  const { network } = input;
  const forkCheck = network.settings.quorum.fork_check;
  const recorded = forkCheck ? recordedFinalized(input.chainHead ?? null) : null;
  // With the check off, a verdict it gave while on would otherwise stand for good.
  const memory = forkCheck ? input.memory : withoutForkVerdicts(input.memory);
  const settings = network.settings.quorum;
  const options: CallOptions = {
    upstream: deps.upstream,
    timeoutMs: settings.check_timeout_ms,
    maxResponseBytes: network.settings.max_response_bytes,
    scrub: deps.scrub,
  };
  const askedAt = deps.clock();
  const asked = await Promise.all(
    network.providers.map(async (provider): Promise<ProviderCheck> => {
      const askChainId = needsChainIdCheck(
        memory[provider.name],
        askedAt,
        settings.chain_id_check_seconds,
      );
      const [answer, chainId, finalized] = await Promise.all([
        latestBlock(options, provider),
        askChainId ? chainIdOf(options, provider) : null,
        recorded === null ? undefined : blockAt(options, provider, recorded.number),
      ]);
      const hash = finalized !== undefined && !("error" in finalized) ? finalized.hash : undefined;
      return {
        check: {
          provider: provider.name,
          answer,
          chainIdOk: chainId === null ? null : chainId === network.chainId,
          ...(hash === undefined ? {} : { finalizedHash: hash }),
        },
        finalized,
      };
    }),
  );
  const checks = asked.map((one) => one.check);

  const now = deps.clock();
  const result = computeQuorum({
    checks,
    memory,
    requestStats: windowsOf(input.requestStats, now, settings.failing_often.window_seconds),
    divider: network.blockMajorityDivider,
    settings,
    now,
    recordedFinalizedHash: recorded?.hash ?? null,
  });
  const snapshot: QuorumSnapshot = {
    head: result.head,
    headTimestamp: result.headTimestamp,
    members: result.members,
    excluded: result.excluded,
    failures: Object.fromEntries(
      asked.flatMap(({ check, finalized }): Array<[string, string]> => {
        const reason = result.excluded[check.provider];
        if (reason === "wrong_fork" && recorded !== null) {
          return [[check.provider, forkDetail(finalized, recorded)]];
        }
        return "error" in check.answer && reason !== undefined
          ? [[check.provider, check.answer.error]]
          : [];
      }),
    ),
    heads: headsOf(checks, input.previous),
    computedAt: now,
    headsReadAt: askedAt,
  };

  const [, published] = await Promise.all([
    deps.monitorStore.writeCheckMemory(network.name, result.memory, now),
    deps.monitorStore.writeQuorum(network.name, snapshot),
  ]);
  if (!published) {
    deps.telemetry.log(
      "info",
      "quorum not published: an overlapping monitor run stored a newer one",
      {
        network: network.name,
      },
    );
  }
  report(deps.telemetry, network, input.previous, snapshot);
  // An overlapping run that published a newer snapshot tells the story from there.
  if (published) {
    for (const event of quorumEvents(network, input.previous, snapshot, checks)) {
      deps.events?.record(makeEvent(event, deps.scrub));
    }
  }
  return { snapshot, finalizedMajority: result.finalizedMajority };
}

function withoutForkVerdicts(
  memory: Readonly<Record<string, CheckMemory>>,
): Record<string, CheckMemory> {
  return Object.fromEntries(
    // The checks a fork verdict holds a provider out after it go with the verdict.
    Object.entries(memory).map(([provider, kept]) => [
      provider,
      {
        ...kept,
        wrongFork: false,
        failedRecentlyRemaining: kept.wrongFork === true ? 0 : kept.failedRecentlyRemaining,
      },
    ]),
  );
}

/** The recorded finalized block, when it has a hash to compare with. */
function recordedFinalized(head: ChainHead | null): { number: number; hash: string } | null {
  const finalized: BlockPosition | null = head?.finalized ?? null;
  return finalized !== null && finalized.hash !== null
    ? { number: finalized.number, hash: finalized.hash }
    : null;
}

/** What a provider out as `wrong_fork` showed at the recorded finalized height this tick. */
function forkDetail(
  finalized: LatestBlock | undefined,
  recorded: { number: number; hash: string },
): string {
  const against = `the recorded ${recorded.hash}`;
  if (finalized === undefined || "error" in finalized || finalized.hash === undefined) {
    const why = finalized !== undefined && "error" in finalized ? `: ${finalized.error}` : "";
    return `another fork when last seen; no block ${recorded.number} this check${why}`;
  }
  return `block ${recorded.number} is ${finalized.hash}, not ${against}`;
}

const observedHead = (snapshot: QuorumSnapshot): ObservedHead => ({
  number: snapshot.head,
  timestamp: snapshot.headTimestamp,
  at: snapshot.computedAt,
});

/** The events a new snapshot calls for: who left or rejoined the quorum, and head stalls. */
function quorumEvents(
  network: Network,
  previous: QuorumSnapshot | null,
  snapshot: QuorumSnapshot,
  checks: readonly HeadCheck[],
): GatewayEvent[] {
  const at = snapshot.computedAt;
  const events: GatewayEvent[] = quorumTransitions(previous, snapshot).map((transition) => ({
    network: network.name,
    at,
    provider: transition.provider,
    kind: transition.kind,
    reason: transition.reason,
    detail: headDetail(
      checks.find((check) => check.provider === transition.provider),
      snapshot,
    ),
  }));
  const stall = headStallEvent(
    network.name,
    previous && observedHead(previous),
    observedHead(snapshot),
    {
      blockTimeSeconds: network.settings.block_time_seconds,
      stallBlockTimes: network.settings.events.head_stall_block_times,
    },
  );
  return stall === null ? events : [...events, stall];
}

/** What this check saw of a provider, against the quorum head. */
function headDetail(check: HeadCheck | undefined, snapshot: QuorumSnapshot): string {
  if (check === undefined) return "not checked";
  const fork = snapshot.excluded[check.provider] === "wrong_fork";
  if (fork) return snapshot.failures?.[check.provider] ?? "another fork";
  if ("error" in check.answer) return `no answer: ${check.answer.error}`;
  const { number, timestamp } = check.answer;
  if (snapshot.head === null || snapshot.headTimestamp === null) return `head ${number}`;
  // Both distances: a head can be out as ahead by its block number with a level timestamp.
  const blocks = number - snapshot.head;
  const place =
    blocks > 0 ? `${blocks} blocks above` : blocks < 0 ? `${-blocks} blocks below` : "at";
  const behind = snapshot.headTimestamp - timestamp;
  const time = behind > 0 ? `${behind} s behind` : behind < 0 ? `${-behind} s ahead` : "level";
  return `head ${number}, ${place} the quorum head ${snapshot.head}, timestamp ${time}`;
}

/** This check's heads; a provider that did not answer keeps the head it was last seen at. */
function headsOf(
  checks: readonly HeadCheck[],
  previous: QuorumSnapshot | null,
): Record<string, HeadInfo> {
  const heads: Record<string, HeadInfo> = {};
  for (const check of checks) {
    if (!("error" in check.answer)) {
      heads[check.provider] = { number: check.answer.number, timestamp: check.answer.timestamp };
    } else {
      const last = previous?.heads[check.provider];
      if (last !== undefined) heads[check.provider] = last;
    }
  }
  return heads;
}

function report(
  telemetry: Telemetry,
  network: Network,
  previous: QuorumSnapshot | null,
  snapshot: QuorumSnapshot,
): void {
  const dims = { network: network.name };
  telemetry.measure("quorum_size", dims, snapshot.members.length, "Count");
  if (snapshot.headTimestamp !== null) {
    for (const provider of snapshot.members.concat(Object.keys(snapshot.excluded))) {
      const head = snapshot.heads[provider];
      // Another chain's or fork's head is no lag behind this one.
      const reason = snapshot.excluded[provider];
      if (head === undefined || reason === "wrong_chain" || reason === "wrong_fork") continue;
      const lag = Math.max(0, snapshot.headTimestamp - head.timestamp);
      telemetry.measure("head_lag_seconds", { ...dims, provider }, lag, "Seconds");
    }
  }

  const fields = {
    network: network.name,
    head: snapshot.head,
    members: snapshot.members,
    excluded: snapshot.excluded,
  };
  if (snapshot.members.length === 0) {
    // Logged when quorum is lost; while it stays lost, `quorum_size` 0 carries the news.
    if (previous === null || previous.members.length > 0) {
      telemetry.log("error", "no provider in quorum", fields);
    }
  } else if (previous === null) {
    telemetry.log("info", "quorum computed", fields);
  } else {
    const joined = snapshot.members.filter((name) => !previous.members.includes(name));
    const left = Object.fromEntries(
      Object.entries(snapshot.excluded).filter(([name]) => previous.members.includes(name)),
    );
    if (joined.length > 0 || Object.keys(left).length > 0) {
      telemetry.log(Object.keys(left).length > 0 ? "warn" : "info", "quorum membership changed", {
        ...fields,
        joined,
        left,
      });
    }
  }
}
