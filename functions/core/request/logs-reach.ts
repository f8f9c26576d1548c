import type { Network } from "../network-model.ts";
import type { Upstream } from "../ports.ts";
import type { SelectionContext } from "../selection.ts";
import { type BlockRange, quantity } from "./logs-range.ts";
import type { PieceAnswer } from "./logs-split.ts";

/**
 * Some nodes (anvil, older reth) answer an eth_getLogs whose `toBlock` is above their own head
 * with the logs up to their head and no error (geth refuses instead). A provider a block behind
 * the served head, which `latest` is pinned to, would then hand an indexer a range without its
 * newest blocks' logs, and the indexer would move past them for good (docs/behaviour.md §12).
 * So a log answer from a provider the gateway has not seen at the range's last block is checked:
 * the provider is asked for that block, and without it (or without an answer) the logs are not
 * used; the query fails, naming why, and the caller asks again.
 */

export interface ReachCheck {
  /** The highest block this provider was seen at (the monitor's check, its own answers). */
  readonly seenAt: (provider: string) => number | null;
  /** Whether the provider has the block; false when it answered null or did not answer. */
  readonly hasBlock: (provider: string, block: number) => Promise<boolean>;
}

/** An answer whose result is a list (logs), not an error: looked for near the start only. */
const LOGS_RESULT = /"result"\s*:\s*\[/;
const LOOK_AT_CHARS = 256;

export async function checkedReach(
  piece: BlockRange,
  answer: PieceAnswer,
  check: ReachCheck,
): Promise<PieceAnswer> {
  const { provider, text } = answer;
  if (provider === null || text === null || !LOGS_RESULT.test(text.slice(0, LOOK_AT_CHARS))) {
    return answer;
  }
  if ((check.seenAt(provider) ?? -1) >= piece.to) return answer;
  const upstreamCalls = answer.upstreamCalls + 1;
  if (await check.hasBlock(provider, piece.to)) return { ...answer, upstreamCalls };
  return {
    text: null,
    provider: null,
    error: `${provider} answered before it had block ${quantity(piece.to)}: its logs may end before the range does`,
    upstreamCalls,
  };
}

export interface ReachDeps {
  readonly upstream: Upstream;
  readonly clock: () => number;
  /** The observed heads in force; `observe` records one (a provider shown to have a block). */
  readonly observed: {
    inForce(network: Network, context: SelectionContext): Map<string, number>;
    observe(network: string, provider: string, block: number, now: number): void;
  };
}

/**
 * The check for one request's log queries. A provider is taken to have a block it was seen at
 * (the monitor's check, this container's observations, a check of this request), and so is
 * every quorum member for blocks `max_lag_seconds` of blocks under the quorum's head: a member
 * is never further behind. With no quorum snapshot (the monitor down) every near answer is
 * checked.
 */
export function reachCheckFor(
  network: Network,
  context: SelectionContext,
  limits: { readonly deadline: number },
  deps: ReachDeps,
): ReachCheck {
  const observed = deps.observed.inForce(network, context);
  const confirmed = new Map<string, number>();
  const { settings } = network;
  const quorum = context.state.quorum;
  const lagBlocks = Math.ceil(settings.quorum.max_lag_seconds / settings.block_time_seconds) + 1;
  const memberFloor = quorum === null || quorum.head === null ? undefined : quorum.head - lagBlocks;
  return {
    seenAt: (provider) => {
      const heads = [
        quorum?.heads[provider]?.number,
        observed.get(provider),
        confirmed.get(provider),
        quorum?.members.includes(provider) ? memberFloor : undefined,
      ];
      const known = heads.filter((head): head is number => head !== undefined);
      return known.length === 0 ? null : Math.max(...known);
    },
    hasBlock: async (provider, block) => {
      const url = network.providers.find((candidate) => candidate.name === provider)?.url;
      const timeoutMs = Math.floor(
        Math.min(settings.request_timeout_ms, limits.deadline - deps.clock()),
      );
      if (url === undefined || timeoutMs <= 0) return false;
      const result = await deps.upstream.send({
        url,
        body: `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["${quantity(block)}",false]}`,
        timeoutMs,
        maxResponseBytes: settings.max_response_bytes,
        idempotent: true,
      });
      const has = result.ok && result.status === 200 && namesABlock(result.body);
      if (has) {
        confirmed.set(provider, Math.max(block, confirmed.get(provider) ?? block));
        deps.observed.observe(network.name, provider, block, deps.clock());
      }
      return has;
    },
  };
}

function namesABlock(body: string): boolean {
  try {
    const result = (JSON.parse(body) as { result?: unknown })?.result;
    return typeof result === "object" && result !== null;
  } catch {
    return false;
  }
}
