import { bloomBits } from "../../functions/core/request/logs/checks/logs-bloom.ts";
import { answer, type Script, type SentCall } from "./scripted-upstream.ts";

/**
 * A made-up chain for the scripted upstream (docs/behaviour.md §12.12): each block's logs,
 * and headers whose `logsBloom` is built from them as the Yellow Paper says (so a bloom can
 * also be made to lie), served by `chainScript` the way a node answers `eth_getLogs` (range
 * or `blockHash`), `eth_getBlockByNumber`, `eth_getBlockByHash` and `eth_getBlockReceipts`,
 * alone or in a batch, with a provider's misbehaviour on top.
 */

export const CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
export const TOPIC = `0x${"ab".repeat(32)}`;

const hex = (n: number) => `0x${n.toString(16)}`;

export const hashOf = (block: number, fork = 0) =>
  `0x${fork.toString(16).padStart(2, "0")}${block.toString(16).padStart(62, "0")}`;

export interface ChainLog {
  readonly address: string;
  readonly topics: readonly string[];
  readonly blockNumber: string;
  readonly blockHash: string;
  readonly transactionHash: string;
  readonly logIndex: string;
  readonly removed: false;
}

/** A bloom with the bits of every value set (0x + 512 hex digits). */
export function bloomOf(values: readonly string[]): string {
  const bytes = new Uint8Array(256);
  for (const value of values) {
    for (const bit of bloomBits(Uint8Array.from(Buffer.from(value.slice(2), "hex")))) {
      bytes[255 - Math.floor(bit / 8)] = (bytes[255 - Math.floor(bit / 8)] ?? 0) | (1 << (bit % 8));
    }
  }
  return `0x${Buffer.from(bytes).toString("hex")}`;
}

export class FakeChain {
  /** Blocks 0..head; `logsAt` says how many logs of CONTRACT/TOPIC a block holds. */
  constructor(
    public head: number,
    readonly logsAt: (block: number) => number = () => 1,
    /** Blocks whose bloom says the contract is there although no log is (a false positive). */
    readonly lyingBlooms: ReadonlySet<number> = new Set(),
  ) {}

  logs(block: number): ChainLog[] {
    return Array.from({ length: this.logsAt(block) }, (_, index) => ({
      address: CONTRACT,
      topics: [TOPIC],
      blockNumber: hex(block),
      blockHash: hashOf(block),
      transactionHash: `0x${block.toString(16).padStart(60, "0")}${index.toString(16).padStart(4, "0")}`,
      logIndex: hex(index),
      removed: false,
    }));
  }

  header(block: number) {
    const lies = this.lyingBlooms.has(block);
    return {
      number: hex(block),
      hash: hashOf(block),
      parentHash: hashOf(Math.max(0, block - 1)),
      logsBloom: bloomOf(this.logs(block).length > 0 || lies ? [CONTRACT, TOPIC] : []),
    };
  }
}

/** How a provider departs from the chain. */
export interface Misbehaviour {
  /** Its head now (default: the chain's): a block above it is null, a log range is clamped to it. */
  readonly head?: () => number;
  /** Its log index leaves out the logs of blocks at or over this (an empty list for them). */
  readonly logsMissingFrom?: () => number;
  /** Answers eth_getBlockReceipts with "method not found". */
  readonly noReceipts?: boolean;
  /** Its receipts leave out the logs its log index leaves out (a lie kept consistent). */
  readonly receiptsAsItsLogs?: boolean;
  /** Its logs name this hash instead of the block's (a stale fork's logs). */
  readonly staleHash?: string;
}

/** Calls a provider received, by method (batch members counted one by one). */
export type MethodCounts = Map<string, number>;

export function chainScript(
  chain: FakeChain,
  misbehaviour: Misbehaviour = {},
  seen: MethodCounts = new Map(),
): Script {
  const head = () => Math.min(chain.head, misbehaviour.head?.() ?? chain.head);
  const logsOf = (block: number) => {
    if (block > head() || block >= (misbehaviour.logsMissingFrom?.() ?? Infinity)) return [];
    const logs = chain.logs(block);
    return misbehaviour.staleHash === undefined
      ? logs
      : logs.map((log) => ({ ...log, blockHash: misbehaviour.staleHash as string }));
  };
  const member = (call: SentCall): { result?: unknown; error?: unknown } => {
    seen.set(call.method, (seen.get(call.method) ?? 0) + 1);
    const [first] = call.params as [unknown];
    switch (call.method) {
      case "eth_getLogs": {
        const filter = first as { fromBlock?: string; toBlock?: string; blockHash?: string };
        if (filter.blockHash !== undefined) {
          const block = Number.parseInt(filter.blockHash.slice(4), 16);
          return { result: filter.blockHash === hashOf(block) ? logsOf(block) : [] };
        }
        const point = (given: string | undefined) =>
          given === undefined || given === "latest"
            ? head()
            : given === "earliest"
              ? 0
              : Number(given);
        const from = point(filter.fromBlock);
        // As anvil: a range from above the head is refused; an inverted one is an empty list.
        if (from > head()) {
          return {
            error: { code: -32602, message: `block height is ${head()} but requested was ${from}` },
          };
        }
        const to = Math.min(point(filter.toBlock), head());
        const result: ChainLog[] = [];
        for (let block = from; block <= to; block++) result.push(...logsOf(block));
        return { result };
      }
      case "eth_getBlockByNumber": {
        const block = Number(first);
        return { result: block <= head() ? chain.header(block) : null };
      }
      case "eth_getBlockByHash": {
        const block = Number.parseInt(String(first).slice(4), 16);
        return { result: first === hashOf(block) && block <= head() ? chain.header(block) : null };
      }
      case "eth_getBlockReceipts": {
        if (misbehaviour.noReceipts) {
          return {
            error: { code: -32601, message: "the method eth_getBlockReceipts does not exist" },
          };
        }
        const block = Number.parseInt(String(first).slice(4), 16);
        if (first !== hashOf(block) || block > head()) return { result: null };
        const logs = misbehaviour.receiptsAsItsLogs ? logsOf(block) : chain.logs(block);
        return { result: [{ blockHash: hashOf(block), logs }] };
      }
      case "eth_blockNumber":
        return { result: hex(head()) };
      default:
        return { error: { code: -32601, message: `no ${call.method}` } };
    }
  };
  return (request) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (call: SentCall) =>
      JSON.stringify({ jsonrpc: "2.0", id: call.id, ...member(call) });
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}
