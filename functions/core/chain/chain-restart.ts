import { CHAIN_RESTART_BLOCKS, CHAIN_RESTART_CHECKS } from "../policies.ts";
import type { GatewayEvent } from "../status/events.ts";
import type { ChainHead } from "./chain-head.ts";

/**
 * A chain that restarted under the same chain id (docs/behaviour.md §10.7): a devnet or a
 * testnet reset shows, through the quorum, a head far below the one recorded, on a block made
 * just now. One chain cannot do that: its lower blocks are older, so providers merely behind
 * show old blocks. Seen for `CHAIN_RESTART_CHECKS` checks in a row, the chain position resets
 * to the quorum's (`advanceHead`). Only the quorum's head counts, so one provider lying low
 * cannot move it, and the checks in a row keep a brief glitch from doing so.
 */

/**
 * Whether this check's quorum head is another chain's: more than `CHAIN_RESTART_BLOCKS` below
 * the recorded `latest`, on a block no older than `maxLagSeconds` (`timestamp`, seconds).
 */
export function restartSeen(
  stored: ChainHead | null,
  quorumHead: number,
  timestamp: number | null,
  now: number,
  maxLagSeconds: number,
): boolean {
  if (stored === null || timestamp === null) return false;
  if (stored.latest.number - quorumHead <= CHAIN_RESTART_BLOCKS) return false;
  return now / 1000 - timestamp <= maxLagSeconds;
}

/** Why the chain position reset, as the event and the log say it. */
export type ResetReason = "chain_restarted" | "finality_broken";

/** The event of a reset: what was recorded, what the quorum showed, and why it was taken. */
export function chainResetEvent(
  network: string,
  stored: ChainHead | null,
  head: ChainHead,
  reason: ResetReason,
): GatewayEvent {
  const was = stored === null ? "nothing" : `latest ${stored.latest.number}`;
  const served = stored?.served?.block ?? null;
  const why =
    reason === "chain_restarted"
      ? `the quorum showed a live head over ${CHAIN_RESTART_BLOCKS} blocks below it for ${CHAIN_RESTART_CHECKS} checks in a row`
      : "the block recorded as finalized was replaced, and a second provider saw it too";
  return {
    network,
    at: head.resetAt ?? head.updatedAt,
    provider: null,
    kind: "chain_reset",
    reason,
    detail:
      `${why}: the chain position was ${was}${served === null ? "" : `, served ${served}`}; ` +
      `now latest ${head.latest.number}, served ${head.served?.block ?? "none"}; ` +
      "answers kept before are not served again",
  };
}
