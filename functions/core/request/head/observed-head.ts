import type { CallInfo } from "../../classify/verdict.ts";
import type { Network } from "../../config/network-model.ts";
import { blockRefOf } from "../../methods/block-ref.ts";
import { quorumInForce } from "../../routing/network-state.ts";
import type { SelectionContext } from "../../routing/selection.ts";
import { blockNamedBy } from "../cache/cache-class.ts";

const HEX_BLOCK = /^0x[0-9a-f]{1,16}$/i;

/** Answers that name the block holding what they return (`blockNumber`, or `number`). */
const NAMES_ITS_BLOCK: ReadonlySet<string> = new Set([
  "eth_getBlockByHash",
  "eth_getHeaderByHash",
  "eth_getHeaderByNumber",
  "eth_getBlockReceipts",
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getTransactionByBlockNumberAndIndex",
]);

/**
 * The block number an answer shows the provider has reached, if any: `eth_blockNumber`'s
 * result; the number of the block `eth_getBlockByNumber` returned for "latest" or a number;
 * the block a receipt, a transaction, a block by hash or a header names; the last block of an
 * `eth_getLogs` answer. Never from "pending" (a block that does not exist yet, one above the
 * head) nor from the other tags.
 */
export function headStatedBy(info: CallInfo, member: unknown): number | null {
  if (typeof member !== "object" || member === null) return null;
  const result = (member as { result?: unknown }).result;
  if (info.method === "eth_blockNumber") return quantity(result);
  if (typeof result !== "object" || result === null) return null;
  if (info.method === "eth_getBlockByNumber") {
    const ref = blockRefOf(info.method, info.params);
    const statesHead = ref?.kind === "number" || (ref?.kind === "tag" && ref.tag === "latest");
    return statesHead ? quantity((result as { number?: unknown }).number) : null;
  }
  if (info.method === "eth_getLogs") return lastLogBlock(result);
  if (!NAMES_ITS_BLOCK.has(info.method)) return null;
  const ref = blockRefOf(info.method, info.params);
  if (ref?.kind === "tag") return null;
  return blockNamedBy(result)?.number ?? null;
}

function quantity(hex: unknown): number | null {
  return typeof hex === "string" && HEX_BLOCK.test(hex) ? Number.parseInt(hex, 16) : null;
}

/** The highest block of a list of logs, removed ones (of a replaced block) left out. */
function lastLogBlock(logs: unknown): number | null {
  if (!Array.isArray(logs)) return null;
  let last: number | null = null;
  for (const log of logs) {
    if (typeof log !== "object" || log === null || (log as { removed?: unknown }).removed === true)
      continue;
    const number = quantity((log as { blockNumber?: unknown }).blockNumber);
    if (number !== null && (last === null || number > last)) last = number;
  }
  return last;
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

/** A block a provider was seen at, and when. */
export interface Observation {
  readonly block: number;
  readonly at: number;
}

/**
 * Heads this container saw in answers between monitor ticks (docs/behaviour.md §5.4): a cache,
 * not a truth. An observation counts only after the quorum snapshot it improves on, and only
 * as far ahead of that snapshot's head as the chain can have moved between the snapshot and
 * the observation (`block_time_seconds`) plus `observed_head_max_ahead_blocks`; older or
 * further ones are ignored.
 */
export class ObservedHeads {
  readonly #heads = new Map<string, Map<string, Observation>>();
  /**
   * Blocks providers showed to the log check, whoever they are: proof of that provider's own
   * reach only, so it spares its next answers up to that block a check without raising the
   * known head (a stalled monitor's snapshot lets no provider raise it).
   */
  readonly #shown = new Map<string, Map<string, Observation>>();
  /**
   * Heads a quorum member showed as a block (a block, a header, a receipt's or a log's block),
   * not only as a number: what the served head is published from (docs/behaviour.md §10.2).
   */
  readonly #blocks = new Map<string, Map<string, Observation>>();

  /**
   * A head a provider stated: `asBlock` when the answer showed the block itself, not a bare
   * `eth_blockNumber` (a front whose number runs ahead of its blocks states such numbers).
   */
  observe(network: string, provider: string, block: number, now: number, asBlock = true): void {
    record(this.#heads, network, provider, block, now);
    if (asBlock) record(this.#blocks, network, provider, block, now);
  }

  /** The head an answer stated (`headStatedBy`), observed for its provider. */
  observeAnswer(
    network: string,
    provider: string,
    answered: { readonly info: CallInfo; readonly member: unknown },
    now: number,
  ): void {
    const block = headStatedBy(answered.info, answered.member);
    if (block === null) return;
    this.observe(network, provider, block, now, answered.info.method !== "eth_blockNumber");
  }

  showed(network: string, provider: string, block: number, now: number): void {
    record(this.#shown, network, provider, block, now);
  }

  /** Each provider's observed head still in force, by provider. */
  inForce(network: Network, context: SelectionContext): Map<string, number> {
    const heads = new Map<string, number>();
    for (const [provider, seen] of this.sightings(network, context))
      heads.set(provider, seen.block);
    return heads;
  }

  /** Each provider's observed head still in force, with when it was seen, by provider. */
  sightings(network: Network, context: SelectionContext): Map<string, Observation> {
    return stillInForce(this.#heads.get(network.name), network, context);
  }

  /** The highest block the provider showed to the log check, still in force, or null. */
  shownBy(network: Network, context: SelectionContext, provider: string): number | null {
    return (
      stillInForce(this.#shown.get(network.name), network, context).get(provider)?.block ?? null
    );
  }

  /** The highest observed head in force, or null. */
  highest(network: Network, context: SelectionContext): number | null {
    return highestSighting(this.sightings(network, context));
  }

  /** The highest head in force that a provider showed as a block, or null. */
  highestBlock(network: Network, context: SelectionContext): number | null {
    return highestSighting(stillInForce(this.#blocks.get(network.name), network, context));
  }
}

/** The highest block among sightings, or null when there is none. */
export function highestSighting(sightings: ReadonlyMap<string, Observation>): number | null {
  let highest: number | null = null;
  for (const seen of sightings.values()) {
    if (highest === null || seen.block > highest) highest = seen.block;
  }
  return highest;
}

function record(
  byNetwork: Map<string, Map<string, Observation>>,
  network: string,
  provider: string,
  block: number,
  now: number,
): void {
  let heads = byNetwork.get(network);
  if (!heads) {
    heads = new Map();
    byNetwork.set(network, heads);
  }
  const seen = heads.get(provider);
  if (seen === undefined || seen.block <= block) heads.set(provider, { block, at: now });
}

/**
 * The observations made since the snapshot and within what the chain can have made between
 * the snapshot and the observation: judged at the time it was seen, so a claim too far ahead
 * then never comes into force as time passes.
 */
function stillInForce(
  observations: ReadonlyMap<string, Observation> | undefined,
  network: Network,
  context: SelectionContext,
): Map<string, Observation> {
  const quorum = context.state.quorum;
  const heads = new Map<string, Observation>();
  if (quorum === null || quorum.head === null) return heads;
  const blockTimeMs = network.settings.block_time_seconds * 1000;
  for (const [provider, seen] of observations ?? []) {
    if (seen.at < quorum.computedAt) continue;
    const since = Math.max(0, Math.min(seen.at, context.now) - quorum.computedAt);
    const lead = Math.ceil(since / blockTimeMs) + network.settings.observed_head_max_ahead_blocks;
    if (seen.block > quorum.head + lead) continue;
    heads.set(provider, seen);
  }
  return heads;
}
