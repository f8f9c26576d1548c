import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  bloomTestFor,
  logFilterOf,
} from "../../../../../functions/core/request/logs/checks/logs-bloom.ts";
import {
  answerLogs,
  completenessOf,
} from "../../../../../functions/core/request/logs/checks/logs-completeness.ts";
import {
  type BlockHeader,
  headerOf,
} from "../../../../../functions/core/request/logs/checks/logs-headers.ts";
import { type AnvilNode, startAnvil } from "../../../../../local/anvil.ts";
import { buildLogChain, type LogChain } from "../../../../../local/log-chain.ts";

/**
 * The bloom math against a real node's blocks (docs/behaviour.md §12.12): every block of an
 * anvil chain with logs in most blocks, its `logsBloom` asked about the contract, each topic a
 * log of it had, and a topic none had. No false negative may exist; the completeness rule
 * finds the block an answer left out.
 */

interface Log {
  readonly address: string;
  readonly topics: readonly string[];
  readonly blockNumber: string;
  readonly blockHash: string;
}

let node: AnvilNode;
let chain: LogChain;
let headers: BlockHeader[];
let logs: Log[];

const hex = (n: number) => `0x${n.toString(16)}`;
const UNSEEN_TOPIC = `0x${"ab".repeat(32)}`;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  chain = await buildLogChain(node, { blocks: 40, every: 2 });
  logs = await node.rpc<Log[]>("eth_getLogs", [{ fromBlock: "0x0", toBlock: hex(chain.head) }]);
  headers = await Promise.all(
    Array.from({ length: chain.head + 1 }, async (_, block) => {
      const header = headerOf(await node.rpc("eth_getBlockByNumber", [hex(block), false]));
      if (header === null) throw new Error(`no header for block ${block}`);
      return header;
    }),
  );
}, 60_000);

afterAll(async () => {
  await node?.stop();
});

const filter = (given: unknown) => {
  const read = logFilterOf(given);
  if (read === null) throw new Error("not a filter");
  return read;
};

describe("logsBloom of a real chain", () => {
  it("says maybe for the contract in every block with its logs, and no for every other block", () => {
    const withLogs = new Set(logs.map((log) => Number(log.blockNumber)));
    expect(withLogs.size).toBeGreaterThan(15);
    const test = bloomTestFor(filter({ address: chain.contract }));
    for (const header of headers) {
      expect(test(header.logsBloom), `block ${header.number}`).toBe(withLogs.has(header.number));
    }
  });

  it("says maybe for each topic in the block that had it (no false negative)", () => {
    for (const log of logs) {
      const header = headers[Number(log.blockNumber)];
      log.topics.forEach((topic, position) => {
        const topics = Array.from({ length: position + 1 }, (_, at) =>
          at === position ? topic : null,
        );
        expect(bloomTestFor(filter({ address: log.address, topics }))(header?.logsBloom)).toBe(
          true,
        );
      });
    }
  });

  it("says no for a topic no log had, in every block", () => {
    const test = bloomTestFor(filter({ address: chain.contract, topics: [UNSEEN_TOPIC] }));
    expect(headers.filter((header) => test(header.logsBloom) === true)).toEqual([]);
  });

  it("an answer without one block's logs is a bloom hit at exactly that block; the whole answer is complete", () => {
    const from = chain.head - 10;
    const inRange = logs.filter((log) => Number(log.blockNumber) >= from);
    const dropped = Number(inRange[inRange.length - 1]?.blockNumber);
    const held = new Map(headers.slice(from).map((header) => [header.number, header]));
    const bloom = bloomTestFor(filter({ address: chain.contract }));
    const whole = answerLogs(inRange);
    const short = answerLogs(inRange.filter((log) => Number(log.blockNumber) !== dropped));
    if (whole === null || short === null) throw new Error("logs not read");
    const judge = (answer: typeof whole) =>
      completenessOf({ from, to: chain.head, logs: answer, headers: held, bloom });
    expect(judge(whole).kind).toBe("complete");
    expect(judge(short)).toMatchObject({ kind: "bloom_hits", blocks: [{ number: dropped }] });
  });
});
