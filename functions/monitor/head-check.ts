import {
  advanceHead,
  type BlockPosition,
  type ChainHead,
  mayPublish,
  publicationDelayMs,
} from "../core/chain-head.ts";
import type { Network, Provider } from "../core/network-model.ts";
import type { QuorumSnapshot } from "../core/network-state.ts";
import type { StateStore, Telemetry, Upstream } from "../core/ports.ts";
import type { MonitorStore } from "./monitor-ports.ts";
import { blocksAt, type CallOptions, type LatestBlock } from "./upstream-calls.ts";

/**
 * The chain position after a quorum check (docs/behaviour.md §10): the quorum's head with its
 * hash, the `safe` and `finalized` blocks, and whether the block recorded as latest last time
 * was replaced (a reorg), asked of a quorum member at its head; written forward-only to the
 * head item every container reads.
 */

export interface HeadCheckDeps {
  readonly upstream: Upstream;
  readonly store: Pick<StateStore, "publishServed">;
  readonly monitorStore: Pick<MonitorStore, "writeHead">;
  readonly clock: () => number;
  readonly telemetry: Telemetry;
  readonly scrub: (text: string) => string;
}

/** At most this many quorum members are asked, one after the other, until one answers. */
const MEMBERS_ASKED = 2;

/**
 * The providers at the quorum head to read the chain position from, best first: those whose
 * block at the recorded finalized height is the most common one, then quorum members. A
 * provider on another chain or fork is never asked: its `finalized` would become the record.
 */
function sources(
  network: Network,
  quorum: QuorumSnapshot,
  finalizedMajority: readonly string[],
): Provider[] {
  const rank = (provider: Provider) =>
    (finalizedMajority.includes(provider.name) ? 0 : 2) +
    (quorum.members.includes(provider.name) ? 0 : 1);
  return network.providers
    .filter((provider) => {
      const reason = quorum.excluded[provider.name];
      return (
        quorum.heads[provider.name]?.number === quorum.head &&
        reason !== "wrong_chain" &&
        reason !== "wrong_fork"
      );
    })
    .sort((a, b) => rank(a) - rank(b));
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
  const candidates = sources(network, quorum, finalizedMajority);
  for (const member of candidates.slice(0, MEMBERS_ASKED)) {
    const observed = await observe(options, member, quorum.head, stored);
    if (observed === null) continue;
    // One member alone cannot break finality: a liar would empty every cache each tick.
    const others = candidates.filter((provider) => provider !== member);
    const seen =
      observed.finalityBroken && !(await breakConfirmed(options, others, stored?.finalized ?? null))
        ? { ...observed, finalityBroken: false }
        : observed;
    const now = deps.clock();
    const head = advanceHead(stored, { ...seen, at: now });
    await deps.monitorStore.writeHead(network.name, head);
    // The quorum's head is a publication of the served head too (when its turn has come).
    const delay = publicationDelayMs(network.settings.state_cache_ms);
    if (mayPublish(stored, head.latest.number, now, delay)) {
      await deps.store.publishServed(network.name, head.latest.number, now, delay);
    }
    const timestamp = quorum.headTimestamp;
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
  return null;
}

async function observe(
  options: CallOptions,
  member: Provider,
  quorumHead: number,
  stored: ChainHead | null,
): Promise<{
  latest: BlockPosition;
  safe: BlockPosition | null;
  finalized: BlockPosition | null;
  reorged: boolean;
  finalityBroken: boolean;
} | null> {
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
  const position = (block: LatestBlock | undefined): BlockPosition | null =>
    block === undefined || "error" in block
      ? null
      : { number: block.number, hash: block.hash ?? null };
  return {
    latest: { number: latest.number, hash: latest.hash ?? null },
    safe: position(safe),
    finalized: position(finalized),
    reorged: recheck && replaced(again, previous),
    finalityBroken: recheckFinal && replaced(finalAgain, previousFinal),
  };
}

/**
 * Whether another quorum member at the head also has another block than the one recorded as
 * finalized; true when there is no other member to ask, false when it does not answer.
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
