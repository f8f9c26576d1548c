import {
  advanceHead,
  type BlockPosition,
  type ChainHead,
  mayPublish,
  publicationDelayMs,
  resetSince,
} from "../chain/chain-head.ts";
import { chainResetEvent, restartSeen } from "../chain/chain-restart.ts";
import type { Network, Provider } from "../config/network-model.ts";
import type { StateStore, Telemetry, Upstream } from "../ports.ts";
import type { QuorumSnapshot } from "../routing/network-state.ts";
import { type EventSink, makeEvent } from "../status/events.ts";
import type { MonitorStore } from "./monitor-ports.ts";
import { blocksAt, type CallOptions, type LatestBlock } from "./upstream-calls.ts";

/**
 * The chain position after a quorum check (docs/behaviour.md §10): the quorum's head with its
 * hash, the `safe` and `finalized` blocks, and whether the block recorded as latest last time
 * was replaced (a reorg), asked of a quorum member at its head; written forward-only to the
 * head item every container reads, unless the chain restarted or its finality broke (§10.7):
 * then the position resets to what the quorum shows, with an event.
 */

export interface HeadCheckDeps {
  readonly upstream: Upstream;
  readonly store: Pick<StateStore, "publishServed">;
  readonly monitorStore: Pick<MonitorStore, "writeHead">;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly scrub: (text: string) => string;
  /** Where a reset of the chain position is recorded. */
  readonly events?: EventSink;
}

/** At most this many quorum members are asked, one after the other, until one answers. */
const MEMBERS_ASKED = 2;

/**
 * The providers at `height` to read the chain position from, best first: those whose block at
 * the recorded finalized height is the most common one, then quorum members. A provider on
 * another chain or fork is never asked: its `finalized` would become the record. Below the
 * quorum head only members are asked.
 */
function sources(
  network: Network,
  quorum: QuorumSnapshot,
  finalizedMajority: readonly string[],
  height: number,
): Provider[] {
  const rank = (provider: Provider) =>
    (finalizedMajority.includes(provider.name) ? 0 : 2) +
    (quorum.members.includes(provider.name) ? 0 : 1);
  return network.providers
    .filter((provider) => {
      const reason = quorum.excluded[provider.name];
      return (
        quorum.heads[provider.name]?.number === height &&
        reason !== "wrong_chain" &&
        reason !== "wrong_fork" &&
        (height === quorum.head || quorum.members.includes(provider.name))
      );
    })
    .sort((a, b) => rank(a) - rank(b));
}

/**
 * The heights to read the chain position at, in turn: the quorum head, then the highest head
 * of a member below it. Only a provider at the quorum head can have been the one to claim it;
 * when none of them shows that block when asked for it by number (a front that claims a head
 * its nodes do not have, or a node behind a balancer that reached it a moment ago), the chain
 * position would stand still while the chain moves. It follows the highest head a member can
 * show instead, and is forward-only, so it never goes back to it.
 */
function heightsToRead(quorum: QuorumSnapshot, head: number): number[] {
  const below = quorum.members
    .map((name) => quorum.heads[name]?.number)
    .filter((number): number is number => number !== undefined && number < head);
  return below.length === 0 ? [head] : [head, Math.max(...below)];
}

export async function runHeadCheck(
  deps: HeadCheckDeps,
  network: Network,
  quorum: QuorumSnapshot,
  stored: ChainHead | null,
  finalizedMajority: readonly string[] = [],
): Promise<ChainHead | null> {
  if (quorum.head === null) return null;
  const options: CallOptions = {
    upstream: deps.upstream,
    timeoutMs: network.settings.quorum.check_timeout_ms,
    maxResponseBytes: network.settings.max_response_bytes,
    scrub: deps.scrub,
  };
  const heights = heightsToRead(quorum, quorum.head);
  const readable = heights.map((height) => sources(network, quorum, finalizedMajority, height));
  for (const [index, height] of heights.entries()) {
    const candidates = readable[index] ?? [];
    for (const member of candidates.slice(0, MEMBERS_ASKED)) {
      const observed = await observe(options, member, height, stored);
      if (observed === null) continue;
      if (height !== quorum.head) {
        deps.telemetry.log("warn", "no provider showed the block at the quorum head", {
          network: network.name,
          quorum_head: quorum.head,
          read_at: height,
          provider: member.name,
        });
      }
      const timestamp =
        height === quorum.head
          ? quorum.headTimestamp
          : (quorum.heads[member.name]?.timestamp ?? null);
      // Those at the height read first, then those at the other heights: read below the quorum
      // head, the member read may be the only one there, and must not break finality alone.
      const confirmers = [...candidates, ...readable.flat()].filter(
        (provider, at, all) => provider !== member && all.indexOf(provider) === at,
      );
      const settled = await withFinalityConfirmed(options, observed, confirmers);
      return record(deps, options, network, stored, {
        member,
        observed: settled,
        confirmers,
        timestamp,
      });
    }
  }
  return null;
}

/** Writes what one member showed as the chain position, and publishes it when its turn came. */
async function record(
  deps: HeadCheckDeps,
  options: CallOptions,
  network: Network,
  stored: ChainHead | null,
  read: {
    readonly member: Provider;
    readonly observed: Observed;
    /** The other providers that may be read: a finality break needs one to confirm it. */
    readonly confirmers: readonly Provider[];
    /** The block timestamp of the head read, seconds. */
    readonly timestamp: number | null;
  },
): Promise<ChainHead> {
  const { member, observed, confirmers, timestamp } = read;
  // A reset is the one step back, and empties every cache: never on one provider's word while
  // the network has others (down, behind or out for now), or a liar left alone would take the
  // chain position to its own chain; a lone provider of a one-provider network is the chain.
  const alone = confirmers.length === 0 && network.providers.length > 1;
  // One member alone cannot break finality: a liar would empty every cache each tick.
  const seen =
    observed.finalityBroken &&
    (alone || !(await breakConfirmed(options, confirmers, stored?.finalized ?? null)))
      ? { ...observed, finalityBroken: false }
      : observed;
  const now = deps.clock();
  const restart =
    !alone &&
    restartSeen(
      stored,
      observed.latest.number,
      timestamp,
      now,
      network.settings.quorum.max_lag_seconds,
    );
  const head = advanceHead(stored, { ...seen, restartSeen: restart, at: now });
  const reset = resetSince(stored, head);
  await deps.monitorStore.writeHead(network.name, head, reset);
  if (reset) {
    const reason = seen.finalityBroken ? "finality_broken" : "chain_restarted";
    const event = chainResetEvent(network.name, stored, head, reason);
    deps.telemetry.log("error", "chain position reset to the quorum's", {
      network: network.name,
      reason,
      detail: event.detail,
    });
    deps.events?.record(makeEvent(event, deps.scrub));
  } else {
    // The quorum's head is a publication of the served head too (when its turn has come).
    const delay = publicationDelayMs(network.settings.head_cache_ms);
    if (mayPublish(stored, head.latest.number, now, delay)) {
      // A publication is one source of the served head among others (the containers'): one
      // given up (DynamoDB slow past the write margin) must not fail the tick, its probes and
      // its heartbeat with it.
      await deps.store
        .publishServed(network.name, head.latest.number, now, delay, head.resetAt ?? 0)
        .catch((error: unknown) =>
          deps.telemetry.log("warn", "served head not published", {
            network: network.name,
            error: deps.scrub(error instanceof Error ? error.message : String(error)),
          }),
        );
    }
  }
  if (timestamp !== null) {
    const lag = Math.max(0, deps.clock() / 1000 - timestamp);
    deps.telemetry.measure("served_head_lag_seconds", { network: network.name }, lag, "Seconds");
  }
  if (seen.finalityBroken) {
    deps.telemetry.log("error", "finality broken: the block recorded as finalized was replaced", {
      network: network.name,
      height: stored?.finalized?.number,
      was: stored?.finalized?.hash,
      provider: member.name,
    });
  }
  if (seen.reorged) {
    deps.telemetry.log("warn", "reorg: the block recorded as latest was replaced", {
      network: network.name,
      height: stored?.latest.number,
      was: stored?.latest.hash,
      provider: member.name,
    });
  }
  return head;
}

/** What one member shows at a height: the block there, the finality tags, and any reorg. */
interface Observed {
  readonly latest: BlockPosition;
  readonly safe: BlockPosition | null;
  readonly finalized: BlockPosition | null;
  readonly reorged: boolean;
  readonly finalityBroken: boolean;
}

async function observe(
  options: CallOptions,
  member: Provider,
  quorumHead: number,
  stored: ChainHead | null,
): Promise<Observed | null> {
  const previous = stored?.latest ?? null;
  const recheck = previous !== null && previous.hash !== null && previous.number <= quorumHead;
  const previousFinal = stored?.finalized ?? null;
  const recheckFinal =
    previousFinal !== null && previousFinal.hash !== null && previousFinal.number <= quorumHead;
  // One batch: the head's hash, the finality tags and, for the reorg checks, the blocks now at
  // the heights recorded as latest and as finalized last time.
  const blocks = await blocksAt(options, member, [
    `0x${quorumHead.toString(16)}`,
    "safe",
    "finalized",
    ...(recheck ? [`0x${previous.number.toString(16)}`] : []),
    ...(recheckFinal ? [`0x${previousFinal.number.toString(16)}`] : []),
  ]);
  const [latest, safe, finalized] = blocks;
  const again = recheck ? blocks[3] : undefined;
  const finalAgain = recheckFinal ? blocks[recheck ? 4 : 3] : undefined;
  if (latest === undefined || "error" in latest) return null;
  return {
    latest: { number: latest.number, hash: latest.hash ?? null },
    safe: positionOf(safe),
    finalized: positionOf(finalized),
    reorged: recheck && replaced(again, previous),
    finalityBroken: recheckFinal && replaced(finalAgain, previousFinal),
  };
}

/**
 * The member's `safe` and `finalized`, each taken only as far as a second provider confirms
 * (docs/behaviour.md §10.1): the lower of two claims that do not name different blocks at one
 * height. The first other provider that answers is asked; when it and the member disagree at
 * one height (one of them on another fork), a third settles it; when no two agree, none is
 * taken this tick (the recorded ones stay). One provider calling its own head finalized would
 * otherwise make fresh blocks immutable in every cache, and an ordinary reorg of them a
 * confirmed finality break. With no other provider to ask, the member's claim stands.
 */
async function withFinalityConfirmed(
  options: CallOptions,
  observed: Observed,
  others: readonly Provider[],
): Promise<Observed> {
  if (others.length === 0) return observed;
  const claims: Array<{ safe: BlockPosition | null; finalized: BlockPosition | null }> = [
    { safe: observed.safe, finalized: observed.finalized },
  ];
  let settled = { safe: null as BlockPosition | null, finalized: null as BlockPosition | null };
  for (const other of others.slice(0, FINALITY_CONFIRMERS)) {
    const [safe, finalized] = (await blocksAt(options, other, ["safe", "finalized"])).map(
      positionOf,
    );
    if (safe === null && finalized === null) continue;
    claims.push({ safe: safe ?? null, finalized: finalized ?? null });
    settled = {
      safe: agreed(claims.map((claim) => claim.safe)),
      finalized: agreed(claims.map((claim) => claim.finalized)),
    };
    const open = (mine: BlockPosition | null, confirmed: BlockPosition | null) =>
      mine !== null && confirmed === null;
    if (!open(observed.safe, settled.safe) && !open(observed.finalized, settled.finalized)) break;
  }
  return { ...observed, ...settled };
}

/** Other providers asked, at most, to confirm the member's finality. */
const FINALITY_CONFIRMERS = 2;

function positionOf(block: LatestBlock | undefined): BlockPosition | null {
  return block === undefined || "error" in block
    ? null
    : { number: block.number, hash: block.hash ?? null };
}

/** The highest position two of the claims agree on (the lower of the two); null for none. */
function agreed(claims: ReadonlyArray<BlockPosition | null>): BlockPosition | null {
  let best: BlockPosition | null = null;
  for (const [index, mine] of claims.entries()) {
    for (const theirs of claims.slice(index + 1)) {
      const both = lowerOf(mine, theirs);
      if (both !== null && (best === null || both.number > best.number)) best = both;
    }
  }
  return best;
}

/** The lower of two claims; none when either is missing, or when they differ at one height. */
function lowerOf(mine: BlockPosition | null, theirs: BlockPosition | null): BlockPosition | null {
  if (mine === null || theirs === null) return null;
  if (mine.number !== theirs.number) return mine.number < theirs.number ? mine : theirs;
  return mine.hash === theirs.hash ? mine : null;
}

/**
 * Whether the first other provider that may be read (at the height read, else at the quorum head
 * or the member head below it) also has another block than the one recorded as finalized; true
 * when there is no other to ask (a one-provider network), false when it does not answer.
 */
async function breakConfirmed(
  options: CallOptions,
  others: readonly Provider[],
  recorded: BlockPosition | null,
): Promise<boolean> {
  const other = others[0];
  if (other === undefined) return true;
  if (recorded === null) return false;
  const [now] = await blocksAt(options, other, [`0x${recorded.number.toString(16)}`]);
  return replaced(now, recorded);
}

/** Whether the block now at a recorded height has another hash than the one recorded. */
function replaced(now: LatestBlock | undefined, recorded: BlockPosition | null): boolean {
  return (
    now !== undefined &&
    !("error" in now) &&
    now.hash !== undefined &&
    recorded !== null &&
    now.hash !== recorded.hash
  );
}
