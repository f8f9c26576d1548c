import type { AnvilNode } from "../../local/anvil.ts";
import { type FrontAnswer, type LyingFront, startLyingFront } from "./lying-front.ts";

/**
 * Providers in front of one real archive node (anvil keeps every block's state) that keep
 * what full nodes and archives keep (docs/behaviour.md §16): a pruned front serves the state of
 * its newest `keep` blocks only (a window that moves with the head) and refuses older state
 * in a real client's words, by block number, by `earliest` and by EIP-1898 block hash alike;
 * an archive front serves everything. Each counts the state reads it got, served or refused.
 */

/** The block parameter's position for the methods that read state at a block. */
const STATE_BLOCK_PARAM: Readonly<Record<string, number>> = {
  eth_getBalance: 1,
  eth_getTransactionCount: 1,
  eth_getCode: 1,
  eth_getStorageAt: 2,
  eth_call: 1,
  eth_estimateGas: 1,
  eth_createAccessList: 1,
  eth_getProof: 2,
};

/** A real client's refusal of the state at `block` (hash: the block's, for the words that name it). */
export type Refusal = (block: number, hash: string) => { code: number; message: string };

/** Refusals as clients word them (pruned-history.ts names the source of each). */
export const REFUSALS: Readonly<Record<string, Refusal>> = {
  geth: (_, hash) => ({ code: -32000, message: `missing trie node ${hash.slice(2)} (path )` }),
  gethPathScheme: (_, hash) => ({
    code: -32000,
    message: `historical state ${hash.slice(2)} is not available`,
  }),
  nethermind: (block, hash) => ({
    code: -32002,
    message: `No state available for block ${block} (${hash})`,
  }),
  besu: () => ({ code: -32000, message: "World state unavailable" }),
};

export interface HistoryFront extends LyingFront {
  /** State reads received (a batch's members each), and how many were refused. */
  readonly stateReads: () => number;
  readonly refused: () => number;
  /** Calls of any method received. */
  readonly calls: () => number;
}

/**
 * `keep`: the newest blocks whose state it serves (null: an archive); `refusals`: the words it
 * refuses in, one after another.
 */
export async function startHistoryFront(
  node: AnvilNode,
  keep: number | null,
  refusals: readonly Refusal[] = [REFUSALS.geth as Refusal],
): Promise<HistoryFront> {
  let stateReads = 0;
  let refused = 0;
  let calls = 0;
  const head = headReader(node);
  const front = await startLyingFront(node.url, async (call, forward) => {
    calls++;
    const position = STATE_BLOCK_PARAM[call.method];
    if (position === undefined) return forward();
    stateReads++;
    if (keep === null) return forward();
    const params = Array.isArray(call.params) ? (call.params as unknown[]) : [];
    const block = await blockOf(node, params[position]);
    if (block === null) return forward();
    if (block.number >= (await head()) - keep + 1) return forward();
    const refusal = refusals[refused++ % refusals.length] as Refusal;
    return { error: refusal(block.number, block.hash) } satisfies FrontAnswer;
  });
  return {
    ...front,
    stateReads: () => stateReads,
    refused: () => refused,
    calls: () => calls,
  };
}

/** The block a state read names, or null for `latest` and its kin (always kept). */
async function blockOf(
  node: AnvilNode,
  param: unknown,
): Promise<{ number: number; hash: string } | null> {
  let selector: string | null = null;
  if (typeof param === "string") selector = param;
  else if (typeof param === "object" && param !== null) {
    const named = param as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof named.blockHash === "string") {
      const block = await node.rpc<{ number: string; hash: string } | null>("eth_getBlockByHash", [
        named.blockHash,
        false,
      ]);
      return block === null ? null : { number: Number(block.number), hash: block.hash };
    }
    if (typeof named.blockNumber === "string") selector = named.blockNumber;
  }
  if (selector === null || !/^0x[0-9a-f]+$|^earliest$/i.test(selector)) return null;
  const block = await node.rpc<{ number: string; hash: string }>("eth_getBlockByNumber", [
    selector,
    false,
  ]);
  return { number: Number(block.number), hash: block.hash };
}

/** The node's head, read at most every 100 ms. */
function headReader(node: AnvilNode): () => Promise<number> {
  let cached: { at: number; head: Promise<number> } | null = null;
  return () => {
    const now = Date.now();
    if (cached === null || now - cached.at > 100) {
      const head = node.rpc<string>("eth_blockNumber").then((answer) => Number(answer));
      cached = { at: now, head };
      head.catch(() => {
        cached = null;
      });
    }
    return cached.head;
  };
}

/** A contract whose code returns its storage slot 0 (`eth_call` reads state as indexers do). */
const SLOT_READER = "0x60005460005260206000f3";

export interface StateChain {
  /** An account whose balance and nonce are the block number at every block. */
  readonly account: string;
  /** A contract whose slot 0 is the block number at every block, and whose call returns it. */
  readonly contract: string;
  readonly head: number;
}

/**
 * `blocks` blocks whose state differs at every one, then a block every second: the account's
 * balance and nonce and the contract's slot 0 are the block number. The node must start with
 * no block time (each block's changes go in one batch, then the block is mined).
 */
export async function buildStateChain(node: AnvilNode, blocks: number): Promise<StateChain> {
  const account = "0x00000000000000000000000000000000000a11ce";
  const contract = "0x00000000000000000000000000000000000c0de5";
  const hex = (n: number) => `0x${n.toString(16)}`;
  await node.rpc("anvil_setCode", [contract, SLOT_READER]);
  for (let block = 1; block <= blocks; block++) {
    const calls = [
      ["anvil_setBalance", [account, hex(block)]],
      ["anvil_setNonce", [account, hex(block)]],
      ["anvil_setStorageAt", [contract, hex(0), `0x${block.toString(16).padStart(64, "0")}`]],
      ["evm_mine", []],
    ].map(([method, params], id) => ({ jsonrpc: "2.0", id, method, params }));
    const response = await fetch(node.url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(calls),
    });
    const answers = (await response.json()) as Array<{ error?: unknown }>;
    if (answers.some((answer) => answer.error !== undefined)) {
      throw new Error(`building the chain failed at block ${block}: ${JSON.stringify(answers)}`);
    }
  }
  await node.rpc("evm_setIntervalMining", [1]);
  const head = Number(await node.rpc<string>("eth_blockNumber"));
  return { account, contract, head };
}
