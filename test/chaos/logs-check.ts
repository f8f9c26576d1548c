import { setTimeout as sleep } from "node:timers/promises";
import type { AnvilNode } from "../../local/anvil.ts";
import { PROVIDERS } from "./config.ts";
import { logKey, type OpRecord } from "./traffic.ts";

/**
 * Whether every eth_getLogs answer of a scenario held exactly the logs the node behind it has
 * for that range. A node that answers a `toBlock` above its own head with the logs up to its
 * head (anvil does) hands an indexer a short range without a word, so each node gets a log
 * every block (a feeder calls a contract that emits one), and once the traffic is over and
 * every node has passed the ranges asked, each answer is compared with its node's own logs.
 */

// Runtime: LOG1(topic = calldata[0..32]) with no data; STOP.
const RUNTIME = "60003560006000a100";
// Init: copy the 9-byte runtime (after these 12 bytes) to memory and return it.
const INIT = `0x6009600c60003960096000f3${RUNTIME}`;
const FEED_INTERVAL_MS = 400;

/**
 * Sends each node a transaction that emits a log every `FEED_INTERVAL_MS`, from an account the
 * traffic never reads (the traffic checks the first one's balance). A node that stops mining
 * keeps them pending and mines them when it catches up.
 */
export class LogFeeder {
  readonly #nodes: readonly AnvilNode[];
  #stopped = false;
  #running: Promise<void> | undefined;

  constructor(nodes: readonly AnvilNode[]) {
    this.#nodes = nodes;
  }

  async start(): Promise<void> {
    const contracts = await Promise.all(this.#nodes.map((node) => deployEmitter(node)));
    this.#running = this.#feed(contracts);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#running;
  }

  async #feed(contracts: ReadonlyArray<{ from: string; contract: string }>): Promise<void> {
    for (let round = 0; !this.#stopped; round++) {
      const data = `0x${round.toString(16).padStart(64, "0")}`;
      await Promise.all(
        this.#nodes.map((node, index) => {
          const target = contracts[index];
          if (target === undefined) return undefined;
          return node
            .rpc("eth_sendTransaction", [
              { from: target.from, to: target.contract, data, gas: "0x10000" },
            ])
            .catch(() => undefined);
        }),
      );
      await sleep(FEED_INTERVAL_MS);
    }
  }
}

async function deployEmitter(node: AnvilNode): Promise<{ from: string; contract: string }> {
  const from = (await node.rpc<string[]>("eth_accounts"))[1];
  if (from === undefined) throw new Error("the node has no second unlocked account");
  const hash = await node.rpc<string>("eth_sendTransaction", [{ from, data: INIT }]);
  for (let wait = 0; wait < 100; wait++) {
    const receipt = await node.rpc<{ contractAddress: string } | null>(
      "eth_getTransactionReceipt",
      [hash],
    );
    if (receipt !== null) return { from, contract: receipt.contractAddress };
    await sleep(100);
  }
  throw new Error("the log emitter was not deployed within 10 s");
}

export interface LogMismatch {
  readonly seq: number;
  readonly range: string;
  readonly providers: string;
  readonly answered: number;
  readonly expected: number;
  /** The first log the node has that the answer lacks (or the other way round). */
  readonly first: string;
}

export interface LogComparison {
  /** eth_getLogs answers compared with their node's logs. */
  readonly checked: number;
  readonly mismatches: number;
  /** The first few mismatches, for the report. */
  readonly samples: readonly LogMismatch[];
}

/**
 * Compares every resolved log op with the logs of the node behind the provider that answered
 * it (any node's, when the answer named none: the answer cache's). Waits first, up to
 * `timeoutMs`, for every node to be past the highest block asked.
 */
export async function compareLogs(
  ops: readonly OpRecord[],
  nodes: readonly AnvilNode[],
  timeoutMs: number,
): Promise<LogComparison> {
  const queries = ops.filter((op) => op.resolved && op.logQuery !== null);
  const highest = Math.max(0, ...queries.map((op) => op.logQuery?.to ?? 0));
  for (const started = Date.now(); Date.now() - started < timeoutMs; await sleep(200)) {
    const heads = await Promise.all(
      nodes.map((node) => node.rpc<string>("eth_blockNumber").then(Number)),
    );
    if (heads.every((head) => head >= highest)) break;
  }
  const known = new Map<string, Promise<string[]>>();
  const nodeLogs = (index: number, from: number, to: number) => {
    const key = `${index}:${from}:${to}`;
    let logs = known.get(key);
    if (logs === undefined) {
      const node = nodes[index];
      logs =
        node === undefined
          ? Promise.resolve([])
          : node
              .rpc<Array<Record<string, unknown>>>("eth_getLogs", [
                { fromBlock: `0x${from.toString(16)}`, toBlock: `0x${to.toString(16)}` },
              ])
              .then((list) => list.map((log) => logKey(log as Parameters<typeof logKey>[0])));
      known.set(key, logs);
    }
    return logs;
  };
  let mismatches = 0;
  const samples: LogMismatch[] = [];
  for (const op of queries) {
    const query = op.logQuery;
    if (query === null) continue;
    const named = [...new Set(op.exchanges.flatMap((exchange) => exchange.providers))];
    const indexes = (named.length > 0 ? named : [...PROVIDERS])
      .map((name) => PROVIDERS.indexOf(name as (typeof PROVIDERS)[number]))
      .filter((index) => index >= 0);
    const candidates = await Promise.all(
      indexes.map((index) => nodeLogs(index, query.from, query.to)),
    );
    const answered = query.logs.join(",");
    if (candidates.some((logs) => logs.join(",") === answered)) continue;
    mismatches++;
    const expected = candidates[0] ?? [];
    if (samples.length < 5) {
      samples.push({
        seq: op.seq,
        range: `${query.from}-${query.to}`,
        providers: named.join(",") || "-",
        answered: query.logs.length,
        expected: expected.length,
        first:
          expected.find((log) => !query.logs.includes(log)) ??
          query.logs.find((log) => !expected.includes(log)) ??
          "(same logs, another order)",
      });
    }
  }
  return { checked: queries.length, mismatches, samples };
}
