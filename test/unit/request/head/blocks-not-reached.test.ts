import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";
import type { HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer, type SentCall } from "../../../support/scripted-upstream.ts";
import {
  failingWith as failing,
  replying as node,
  P1,
  P2,
  settledChainHarness,
  TWO_PROVIDERS as two,
} from "../../../support/settled-chain-harness.ts";

/**
 * A provider that has not reached a block the gateway knows exists (docs/behaviour.md §4.5,
 * §10.5): its `null` or "not found" for a block by number, a fee history cut at its own head,
 * a block or transaction by hash it has not seen, are its being behind, and the provider that
 * has the block answers; a hash nobody has (made up) costs nobody. The pipeline on a settled
 * chain: scripted upstream, in-memory state, a test clock. Fixed bugs are "regression: …".
 */
const hex = (n: number) => `0x${n.toString(16)}`;
const HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

/** A node at block `height`: blocks above it do not exist there (`null`), as geth answers. */
const nodeAt = (height: number) =>
  node((call) => {
    const block = Number.parseInt(String(call.params[0]), 16);
    if (block > height) return null;
    if (call.method === "eth_getHeaderByNumber") return { number: hex(block), hash: HASH(block) };
    if (call.method.startsWith("trace_")) return [];
    return "0x3";
  });

const call = (id: number, method: string, block: string) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: [block] });

const NULL_ONLY_WHEN_MISSING = [
  "eth_getBlockTransactionCountByNumber",
  "eth_getUncleCountByBlockNumber",
  "eth_getHeaderByNumber",
  // Reth and Erigon answer null for a block they do not have.
  "trace_block",
  "trace_replayBlockTransactions",
];

describe("a null for a block the gateway knows exists, from a lookup whose null means 'no such block'", () => {
  for (const method of NULL_ONLY_WHEN_MISSING) {
    it(`regression: ${method}("latest"), pinned to the served head, got a lagging provider's null; now the provider that has the block answers`, async () => {
      const h = harness(two);
      h.upstream.script(P1, nodeAt(119)).script(P2, nodeAt(125));
      const response = await h.rpc(call(1, method, "latest"));
      expect(response.json.result).not.toBeNull();
      expect(response.json.result).toBeDefined();
      expect(response.headers["x-gateway-provider"]).toBe("p2");
    });

    it(`regression: ${method} of a finalized block answered null by a provider without it was kept as immutable and served after the provider caught up; now it is never kept`, async () => {
      const h = harness([{ name: "p1", url: P1 }]);
      h.upstream.script(P1, nodeAt(10));
      const first = await h.rpc(call(1, method, hex(50)));
      // As for a block's own lookup: the provider has not reached it, and nobody else is asked.
      expect(first.status).toBe(502);
      expect(first.json.error).toBeDefined();
      h.upstream.script(P1, nodeAt(125));
      const response = await h.rpc(call(2, method, hex(50)));
      expect(response.json.result).not.toBeNull();
      expect(response.headers["x-gateway-cache"]).not.toMatch(/^hit/);
    });
  }
});

/**
 * A node at `height` answering eth_feeHistory as anvil does: a newest block above its head is
 * clamped to it, so the history silently ends early (and is empty far enough above).
 */
const feeNodeAt = (height: number) =>
  node((call) => {
    const count = Number.parseInt(String(call.params[0]), 16);
    const newest = Math.min(Number.parseInt(String(call.params[1]), 16), height);
    const oldest = Number.parseInt(String(call.params[1]), 16) - count + 1;
    const blocks = Math.max(0, newest - oldest + 1);
    return {
      baseFeePerGas: Array.from({ length: blocks + 1 }, () => "0x7"),
      gasUsedRatio: Array.from({ length: blocks }, () => 0.5),
      oldestBlock: hex(Math.max(oldest, newest - blocks + 1)),
    };
  });

const feeHistory = (id: number, count: unknown, newest: string) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_feeHistory", params: [count, newest, []] });

/** The blocks a fee history answer covers, first and last. */
const covered = (result: unknown) => {
  const history = result as { oldestBlock: string; gasUsedRatio: number[] };
  const first = Number.parseInt(history.oldestBlock, 16);
  return [first, first + history.gasUsedRatio.length - 1];
};

describe("eth_feeHistory from a provider that has not reached its newest block", () => {
  it("regression: eth_feeHistory(4, latest), pinned to the served head, got a lagging provider's history ending a block early, kept under the served head's number for the next caller; now the provider that has the block answers", async () => {
    const h = harness(two);
    h.upstream.script(P1, feeNodeAt(119)).script(P2, feeNodeAt(125));
    const response = await h.rpc(feeHistory(1, "0x4", "latest"));
    expect(covered(response.json.result)).toEqual([117, 120]);
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    const byNumber = await h.rpc(feeHistory(2, "0x4", hex(120)));
    expect(covered(byNumber.json.result)).toEqual([117, 120]);
  });

  it("holds: a block count given in decimal is read too, and a history cut at its old end (a node without old blocks) is an answer", async () => {
    const h = harness(two);
    const prunedOldEnd = node(() => ({
      baseFeePerGas: ["0x7", "0x7"],
      gasUsedRatio: [0.5],
      oldestBlock: hex(120),
    }));
    h.upstream.script(P1, feeNodeAt(119)).script(P2, prunedOldEnd);
    const response = await h.rpc(feeHistory(1, 4, "latest"));
    expect(covered(response.json.result)).toEqual([120, 120]);
    expect(response.headers["x-gateway-provider"]).toBe("p2");
  });

  it("holds: a block count of 0 gets the node's empty history", async () => {
    const h = harness(two);
    const empty = node(() => ({ baseFeePerGas: [], gasUsedRatio: [], oldestBlock: "0x0" }));
    h.upstream.script(P1, empty).script(P2, empty);
    const response = await h.rpc(feeHistory(1, "0x0", "latest"));
    expect(response.json.result).toEqual({
      baseFeePerGas: [],
      gasUsedRatio: [],
      oldestBlock: "0x0",
    });
    expect(response.headers["x-gateway-provider"]).toBe("p1");
  });
});

const UNKNOWN_HASH = `0x${"ab".repeat(32)}`;
const KNOWN_HASH = `0x${"cd".repeat(32)}`;

/**
 * A node that knows the block and transaction `KNOWN_HASH` and block numbers up to `height`;
 * anything else gets `notFound` (the node's own wording), as anvil, geth and its tracers say.
 */
const hashNode =
  (notFound: { code: number; message: string }, height = 125) =>
  (request: UpstreamRequest) => {
    const call = JSON.parse(request.body) as SentCall;
    const named = JSON.stringify(call.params);
    const byNumber = call.params.find(
      (param) => typeof param === "string" && /^0x[0-9a-f]{1,8}$/.test(param),
    );
    const known =
      named.includes(KNOWN_HASH) ||
      (byNumber !== undefined && Number.parseInt(String(byNumber), 16) <= height);
    const body = known ? { result: "0x5" } : { error: notFound };
    return answer(JSON.stringify({ jsonrpc: "2.0", id: call.id, ...body }));
  };

const byHash = (id: number, method: string, hash: string) => {
  const params =
    method === "eth_getBalance"
      ? ["0x0000000000000000000000000000000000000001", { blockHash: hash }]
      : [hash];
  return JSON.stringify({ jsonrpc: "2.0", id, method, params });
};

describe("a block or transaction named by hash that a provider does not know", () => {
  const ordered: Providers = [
    { name: "p1", url: P1, priority: 1 },
    { name: "p2", url: P2, priority: 2 },
  ];
  const cases = [
    { method: "eth_getBalance", notFound: { code: -32001, message: "Resource not found" } },
    { method: "eth_getBalance", notFound: { code: -32000, message: "header for hash not found" } },
    {
      method: "debug_traceBlockByHash",
      notFound: { code: -32000, message: `block ${UNKNOWN_HASH} not found` },
    },
    {
      method: "debug_traceTransaction",
      notFound: { code: -32000, message: `transaction ${UNKNOWN_HASH} not found` },
    },
  ];

  for (const { method, notFound } of cases) {
    it(`regression: ${method} at a made-up hash ("${notFound.message.slice(0, 24)}…") three times force-rotated the healthy first provider away (any caller could do it); now nobody is penalised and the caller gets the node's answer`, async () => {
      const h = harness(ordered);
      h.upstream.script(P1, hashNode(notFound)).script(P2, hashNode(notFound));
      for (let id = 1; id <= 4; id++) {
        const response = await h.rpc(byHash(id, method, UNKNOWN_HASH));
        expect(response.json.error).toEqual(notFound);
      }
      const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
      expect(read.headers["x-gateway-provider"]).toBe("p2");
      expect(h.store.healthWrites).toEqual([]);
    });
  }

  it("regression: a hash the first provider has not seen yet (a block just mined) got its 'not found' though the next provider knew it; now the next provider answers", async () => {
    const h = harness(ordered);
    const notFound = { code: -32001, message: "Resource not found" };
    h.upstream.script(P2, hashNode(notFound)).script(P1, (request) => {
      const sent = JSON.parse(request.body) as SentCall;
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, result: "0x7" }));
    });
    const response = await h.rpc(byHash(1, "eth_getBalance", UNKNOWN_HASH));
    expect(response.json.result).toBe("0x7");
    expect(response.headers["x-gateway-provider"]).toBe("p1");
  });

  it("regression: geth's tracers say 'block #N not found' for a block they have not reached: debug_traceBlockByNumber(latest), pinned to the served head, got that error from a provider a block behind; now the next provider answers", async () => {
    const h = harness(ordered);
    h.upstream
      .script(P2, hashNode({ code: -32000, message: "block #120 not found" }, 119))
      .script(P1, hashNode({ code: -32000, message: "block #120 not found" }, 125));
    const response = await h.rpc(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "debug_traceBlockByNumber",
        params: ["latest", {}],
      }),
    );
    expect(response.json.result).toBe("0x5");
    expect(response.headers["x-gateway-provider"]).toBe("p1");
  });
});

describe("a made-up hash costs nobody", () => {
  const uncleCount = (id: number) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "eth_getUncleCountByBlockHash",
      params: [HASH(0xdead0000 + id)],
    });

  it("regression: a provider answering 'not found' (anvil) for a made-up block hash, where another answers null (geth), was counted a failed request each time, so 20 made-up hashes in five minutes left it out of the quorum as failing often; now a null from the other provider blames nobody", async () => {
    const h = harness(two);
    h.upstream.script(P1, failing({ code: -32001, message: "Resource not found" })).script(
      P2,
      node(() => null),
    );
    for (let id = 1; id <= 20; id += 1) {
      const response = await h.rpc(uncleCount(id));
      expect(response.json.result).toBeNull();
    }
    expect(h.outcomes.filter((outcome) => outcome.provider === "p1" && !outcome.ok)).toEqual([]);
  });

  it("holds: a provider that does not know a hash another provider found is still counted behind", async () => {
    const h = harness(two);
    h.upstream.script(P1, failing({ code: -32001, message: "Resource not found" })).script(
      P2,
      node(() => "0x0"),
    );
    const response = await h.rpc(uncleCount(1));
    expect(response.json.result).toBe("0x0");
    expect(h.outcomes).toContainEqual({ provider: "p1", ok: false });
  });
});
