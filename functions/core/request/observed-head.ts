import { quorumInForce } from "../network-state.ts";
import type { SelectionContext } from "../selection.ts";
import type { CallInfo } from "../verdict.ts";

const HEX_BLOCK = /^0x[0-9a-f]{1,16}$/i;

/**
 * The block number an answer shows as existing, if any: `eth_blockNumber`'s result, or the
 * number of a block `eth_getBlockByNumber` returned.
 */
export function blockShownBy(info: CallInfo, member: unknown): number | null {
  if (typeof member !== "object" || member === null) return null;
  const result = (member as { result?: unknown }).result;
  let hex: unknown;
  if (info.method === "eth_blockNumber") hex = result;
  else if (
    info.method === "eth_getBlockByNumber" &&
    typeof result === "object" &&
    result !== null
  ) {
    hex = (result as { number?: unknown }).number;
  }
  return typeof hex === "string" && HEX_BLOCK.test(hex) ? Number.parseInt(hex, 16) : null;
}

/**
 * Whether a provider's answers may raise the known head: only a quorum member used as a
 * candidate, so a provider on another chain or running ahead cannot make the honest
 * providers' nulls look stale.
 */
export function mayRaiseHead(
  provider: string,
  emergency: boolean,
  context: SelectionContext,
): boolean {
  if (emergency) return false;
  if (!quorumInForce(context.state, context.now, context.checkIntervalSeconds)) return false;
  return context.state.quorum?.members.includes(provider) ?? false;
}
