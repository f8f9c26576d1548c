import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../functions/core/ports.ts";
import type { HarnessProviders } from "../support/gateway-harness.ts";
import { answer, resultFor, type SentCall } from "../support/scripted-upstream.ts";
import { settledChainHarness } from "../support/settled-chain-harness.ts";

/**
 * Outside attacks on what a caller is told about blocks the gateway knows exist: a provider
 * that has not reached a block answers `null` to the by-number lookups whose `null` only ever
 * means "no such block" (a block's transaction count, its uncle count, its header). Scripted
 * upstream, in-memory state, a test clock: nothing here sleeps.
 */

const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const hex = (n: number) => `0x${n.toString(16)}`;
const HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

/** A node whose answer to each call is `reply(call)`. */
const node = (reply: (call: SentCall) => unknown) => resultFor((_, call) => reply(call));

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

const two: Providers = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];

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

/**
 * A node holding the filters `installed` (each id answers `changes`), answering "filter not
 * found" for any other, as geth and anvil do; any other call gets "0x1".
 */
const filterNode = (installed: readonly string[]) => (request: UpstreamRequest) => {
  const call = JSON.parse(request.body) as SentCall;
  const body = call.method.startsWith("eth_getFilter")
    ? installed.includes(String(call.params[0]))
      ? { result: ["0xaa"] }
      : { error: { code: -32000, message: "filter not found" } }
    : { result: "0x1" };
  return answer(JSON.stringify({ jsonrpc: "2.0", id: call.id, ...body }));
};

const poll = (id: number, filter: string, method = "eth_getFilterChanges") =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: [filter] });

describe("a filter polled through the gateway: it lives on the one provider that installed it", () => {
  const ordered: Providers = [
    { name: "p1", url: P1, priority: 1 },
    { name: "p2", url: P2, priority: 2 },
  ];

  it("regression: a poll that reached a provider without the filter got 'filter not found' (the caller's events lost), and three in a row force-rotated that healthy provider away; now the provider holding it answers, and the other is not penalised", async () => {
    const h = harness(ordered);
    h.upstream.script(P1, filterNode(["0xf1"])).script(P2, filterNode([]));
    for (let id = 1; id <= 4; id++) {
      const response = await h.rpc(poll(id, "0xf1"));
      expect(response.json.result).toEqual(["0xaa"]);
      expect(response.headers["x-gateway-provider"]).toBe("p1");
    }
    const logs = await h.rpc(poll(5, "0xf1", "eth_getFilterLogs"));
    expect(logs.json.result).toEqual(["0xaa"]);
    // Still first for everything else: not demoted, not blacklisted.
    const read = await h.rpc(call(6, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p2");
    expect(h.store.healthWrites).toEqual([]);
  });

  it("holds: a filter no provider holds (expired, or made up) gets the node's own 'filter not found', after each provider is asked once, and nobody is penalised", async () => {
    const h = harness(ordered);
    h.upstream.script(P1, filterNode([])).script(P2, filterNode([]));
    for (let id = 1; id <= 4; id++) {
      const response = await h.rpc(poll(id, "0xdead"));
      expect(response.json.error).toEqual({ code: -32000, message: "filter not found" });
    }
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBe(8);
    const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p2");
    expect(h.store.healthWrites).toEqual([]);
  });

  it("regression: with two providers of one priority, each poll drew its own order and about half went first to the provider without the filter (an extra upstream call each); now every call about filters keeps one order, so a filter is installed and polled on the same provider", async () => {
    let draw = 0;
    // Two draws a request, in turn p2 then p1 first: a plain read's order changes each time.
    const h = harness(
      [
        { name: "p1", url: P1 },
        { name: "p2", url: P2 },
      ],
      () => [0.2, 0.8, 0.8, 0.2][draw++ % 4] ?? 0.5,
    );
    const installs = (request: UpstreamRequest) => {
      const sent = JSON.parse(request.body) as SentCall;
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, result: "0xf1" }));
    };
    h.upstream.script(P1, installs).script(P2, installs);
    const install = await h.rpc(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_newBlockFilter", params: [] }),
    );
    const holder = install.headers["x-gateway-provider"];
    const [holderUrl, otherUrl] = holder === "p1" ? [P1, P2] : [P2, P1];
    h.upstream.script(holderUrl, filterNode(["0xf1"])).script(otherUrl, filterNode([]));
    for (let id = 2; id <= 7; id++) {
      const response = await h.rpc(poll(id, "0xf1"));
      expect(response.json.result).toEqual(["0xaa"]);
    }
    expect(h.upstream.callsTo(otherUrl)).toBe(0);
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

describe("errors of the caller's own code or query do not rotate a healthy provider away", () => {
  const ordered: Providers = [
    { name: "p1", url: P1, priority: 1 },
    { name: "p2", url: P2, priority: 2 },
  ];
  /** anvil's answer to a debug_traceCall whose JS tracer throws; geth's is alike. */
  const tracerThrows = {
    code: -32603,
    message: "Error: x (unknown at :1:29)\n    at result (unknown at :1:29)",
  };
  const node = (error: object) => (request: UpstreamRequest) => {
    const sent = JSON.parse(request.body) as SentCall;
    const body =
      sent.method === "debug_traceCall" || sent.method === "eth_getBalance"
        ? { error }
        : { result: "0x5" };
    return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, ...body }));
  };
  const traceCall = (id: number) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "debug_traceCall",
      params: [{ to: "0x0000000000000000000000000000000000000001" }, "latest", { tracer: "{…}" }],
    });

  it("regression: a debug_traceCall whose own JS tracer throws, three times, force-rotated the healthy first provider away; now the caller gets the error and the provider keeps its place", async () => {
    const h = harness(ordered);
    h.upstream.script(P1, node(tracerThrows)).script(P2, node(tracerThrows));
    for (let id = 1; id <= 4; id++) {
      const response = await h.rpc(traceCall(id));
      expect(response.json.error).toEqual(tracerThrows);
    }
    const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p2");
  });

  it("holds: a broken log index (the same unclassified error on every eth_getLogs) still rotates the provider away: a log query runs no code of the caller's", async () => {
    const broken = { error: { code: -32000, message: "leveldb: closed" } };
    const h = harness(ordered);
    const logsBroken = (request: UpstreamRequest) => {
      const sent = JSON.parse(request.body) as SentCall;
      const body = sent.method === "eth_getLogs" ? broken : { result: "0x5" };
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, ...body }));
    };
    h.upstream.script(P1, logsBroken).script(P2, logsBroken);
    for (let id = 1; id <= 3; id++) {
      await h.rpc(
        JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "eth_getLogs",
          params: [{ fromBlock: hex(100 + id), toBlock: hex(100 + id) }],
        }),
      );
    }
    const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p1");
  });

  it("holds: the same unclassified error three times on a plain read still rotates the provider away (a broken node)", async () => {
    const broken = { code: -32000, message: "leveldb: closed" };
    const h = harness(ordered);
    h.upstream.script(P1, node(broken)).script(P2, node(broken));
    for (let id = 1; id <= 3; id++) {
      await h.rpc(
        JSON.stringify({
          jsonrpc: "2.0",
          id,
          method: "eth_getBalance",
          params: [`0x${id.toString(16).padStart(40, "0")}`, hex(110)],
        }),
      );
    }
    const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p1");
  });
});

describe("a malformed or badly signed raw transaction is the caller's, whatever the node's words", () => {
  const ordered: Providers = [
    { name: "p1", url: P1, priority: 1 },
    { name: "p2", url: P2, priority: 2 },
  ];
  // geth's answers to bytes that are no transaction, or to a bad signature or fee field.
  const refusals = [
    "rlp: expected input list for types.LegacyTx",
    "typed transaction too short",
    "transaction type not supported",
    "invalid sender",
    "max priority fee per gas higher than max fee per gas",
    "oversized data",
  ];
  for (const message of refusals) {
    it(`regression: geth's "${message}", three times, force-rotated the healthy first provider away; now it is the caller's answer and nobody is penalised`, async () => {
      const h = harness(ordered);
      const refusing = (request: UpstreamRequest) => {
        const sent = JSON.parse(request.body) as SentCall;
        const body =
          sent.method === "eth_sendRawTransaction"
            ? { error: { code: -32000, message } }
            : { result: "0x5" };
        return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, ...body }));
      };
      h.upstream.script(P1, refusing).script(P2, refusing);
      for (let id = 1; id <= 3; id++) {
        const response = await h.rpc(
          JSON.stringify({
            jsonrpc: "2.0",
            id,
            method: "eth_sendRawTransaction",
            params: ["0xf8"],
          }),
        );
        expect(response.json.error).toEqual({ code: -32000, message });
      }
      const read = await h.rpc(call(4, "eth_getBlockTransactionCountByNumber", hex(110)));
      expect(read.headers["x-gateway-provider"]).toBe("p2");
    });
  }
});

describe("words the caller wrote, echoed back in a node's error, are not the node's own", () => {
  /** A node that echoes a bad storage slot back, as anvil does, and answers reads "0x5". */
  const echoing = (request: UpstreamRequest) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (sent: SentCall) => {
      const slot = sent.method === "eth_getStorageAt" ? String(sent.params[1]) : null;
      const body =
        slot !== null && !/^0x[0-9a-f]+$/i.test(slot)
          ? {
              error: {
                code: -32602,
                message: `invalid value: string "${slot}", expected a 32 byte hex string`,
              },
            }
          : { result: "0x5" };
      return JSON.stringify({ jsonrpc: "2.0", id: sent.id, ...body });
    };
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
  const storageAt = (id: number, slot: string) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "eth_getStorageAt",
      params: ["0x0000000000000000000000000000000000000001", slot, hex(110)],
    });
  const reads = (count: number) =>
    `[${Array.from({ length: count }, (_, id) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id,
        method: "eth_getBalance",
        params: [`0x${(id + 1).toString(16).padStart(40, "0")}`, hex(110)],
      }),
    ).join(",")}]`;

  it("regression: one batch of four calls whose bad param said 'batch too large', echoed by the node, taught every provider a batch limit of 1 for a day (on the local stack a later batch of 60 cost 50 upstream calls and 10 calls got -32005); now the echo teaches nothing", async () => {
    const h = harness(two);
    h.upstream.script(P1, echoing).script(P2, echoing);
    const attack = `[${[1, 2, 3, 4].map((id) => storageAt(id, "batch too large")).join(",")}]`;
    const refused = await h.rpc(attack);
    const answers = JSON.parse(refused.body) as Array<{ error?: { code: number } }>;
    expect(answers.map((member) => member.error?.code)).toEqual([-32602, -32602, -32602, -32602]);
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBe(1);
    const before = h.upstream.callsTo(P1) + h.upstream.callsTo(P2);
    const batch = await h.rpc(reads(60));
    expect((JSON.parse(batch.body) as unknown[]).length).toBe(60);
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2) - before).toBe(1);
  });

  it("regression: a call whose bad param said 'rate limit', echoed by a lone provider, blacklisted it as rate limited; now it is the caller's answer", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, echoing);
    const response = await h.rpc(storageAt(1, "rate limit exceeded"));
    expect(response.json.error).toMatchObject({ code: -32602 });
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("holds: a node refusing each member of a batch as too large, in its own words, is still learned from", async () => {
    const h = harness(two);
    const refusing = (request: UpstreamRequest) => {
      const parsed = JSON.parse(request.body) as SentCall | SentCall[];
      const one = (sent: SentCall, refuse: boolean) =>
        JSON.stringify({
          jsonrpc: "2.0",
          id: sent.id,
          ...(refuse ? { error: { code: -32600, message: "batch too large" } } : { result: "0x5" }),
        });
      return answer(
        Array.isArray(parsed)
          ? `[${parsed.map((sent) => one(sent, parsed.length > 2)).join(",")}]`
          : one(parsed, false),
      );
    };
    h.upstream.script(P1, refusing).script(P2, refusing);
    const response = await h.rpc(reads(4));
    expect((JSON.parse(response.body) as Array<{ result?: string }>).map((m) => m.result)).toEqual([
      "0x5",
      "0x5",
      "0x5",
      "0x5",
    ]);
    // Refused whole once, then served in two halves of two.
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBe(3);
  });
});

describe("x-gateway-provider on a log query's error", () => {
  it("regression: an eth_getLogs past the head, which every provider refused, handed the caller the last refusal with an empty x-gateway-provider (which means 'from the cache'); now it names the provider whose answer the caller got", async () => {
    const h = harness(two);
    const failing = (request: UpstreamRequest) => {
      const sent = JSON.parse(request.body) as SentCall;
      // anvil's words for a toBlock past its head.
      const error = {
        code: -32602,
        message: "BlockOutOfRangeError: block height is 125 but requested was 300",
      };
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, error }));
    };
    h.upstream.script(P1, failing).script(P2, failing);
    const response = await h.rpc(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [{ fromBlock: hex(100), toBlock: hex(300) }],
      }),
    );
    expect(response.json.error).toMatchObject({ code: -32602 });
    expect(response.headers["x-gateway-provider"]).toMatch(/^p[12]$/);
  });
});

describe("a single call's id that nodes cannot read", () => {
  /** A node that reads only string, null and unsigned integer ids, as reth does (anvil takes -7). */
  const strictIds = (request: UpstreamRequest) => {
    const idText = /"id":\s*([^,}]+)/.exec(request.body)?.[1]?.trim() ?? "null";
    const readable = idText === "null" || idText.startsWith('"') || /^\d{1,19}$/.test(idText);
    const body = readable
      ? `{"jsonrpc":"2.0","id":${idText},"result":"0x5"}`
      : '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}';
    return answer(body);
  };
  for (const id of ["1.5", "1e2", "18446744073709551616", "1e400", "-7"]) {
    it(`regression: id ${id}, valid JSON-RPC, went upstream as written and the node's 'Invalid request' was the answer (in a batch the same call was served); now the caller gets the answer with their id`, async () => {
      const h = harness(two);
      h.upstream.script(P1, strictIds).script(P2, strictIds);
      const response = await h.gatewayRpc(
        `{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000001","${hex(110)}"]}`,
      );
      expect(response.body).toBe(`{"jsonrpc":"2.0","id":${id},"result":"0x5"}`);
    });
  }
});
