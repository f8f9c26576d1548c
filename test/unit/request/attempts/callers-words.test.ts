import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";
import type { HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer, type SentCall } from "../../../support/scripted-upstream.ts";
import {
  failingWith as failing,
  P1,
  P2,
  settledChainHarness,
  TWO_PROVIDERS as two,
} from "../../../support/settled-chain-harness.ts";

/**
 * What the caller wrote, or its own code did, stays the caller's (docs/behaviour.md §4.4,
 * §4.6, §6.5): a revert, a tracer's error, a malformed transaction, a bad param echoed back in
 * a node's words, a made-up method name. None of it penalises a provider, rotates it away or
 * teaches a limit; a provider's own failure still does. The pipeline on a settled chain:
 * scripted upstream, in-memory state, a test clock. Fixed bugs are "regression: …".
 */
const hex = (n: number) => `0x${n.toString(16)}`;
const _HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

const call = (id: number, method: string, block: string) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: [block] });

const ethCall = (extra: Record<string, string>) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "eth_call",
    params: [{ data: "0x6000", ...extra }, "latest"],
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

describe("words a caller writes cannot turn its own revert into the provider's fault", () => {
  // anvil, live: init code reverting with Error("rate limit exceeded"), and a field it ignores.
  const revert = {
    code: 3,
    message: "execution reverted: rate limit exceeded",
    data: "0x08c379a0",
  };

  it("holds: a revert whose reason says 'rate limit' is the caller's answer, sent upstream once", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, failing(revert));
    const response = await h.rpc(ethCall({}));
    expect(response.json.error).toMatchObject({ code: 3 });
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("regression: writing 'reverted' into an ignored field of eth_call hid the node's 'execution reverted', so the revert reason 'rate limit exceeded' blacklisted a lone provider as rate limited; now the revert is the caller's answer", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, failing(revert));
    const response = await h.rpc(ethCall({ note: "reverted" }));
    expect(response.json.error).toMatchObject({ code: 3 });
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("holds: writing the node's words for a range too wide into an eth_getLogs filter does not make its refusal the provider's fault", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, failing({ code: -32000, message: "block range is too wide" }));
    const response = await h.rpc(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [{ fromBlock: "0x1", toBlock: "0x2", note: "block range is too wide" }],
      }),
    );
    expect(response.json.error).toBeDefined();
    expect(h.store.healthWrites).toEqual([]);
  });
});

describe("a JS tracer's own error is the caller's, whatever words it builds", () => {
  // anvil, live: a tracer throwing "rate " + "limit" answers -32603 '"rate limit"\n at result …'.
  const traceCall = JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "debug_traceCall",
    params: [
      { to: "0x0000000000000000000000000000000000000001", data: "0x" },
      "latest",
      { tracer: '{result:function(){throw "rate "+"limit"},fault:function(){},step:function(){}}' },
    ],
  });

  it("regression: a tracer that built the words 'rate limit' at run time (so they were not in the params as written) got a lone provider blacklisted as rate limited; now its error is the caller's answer", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    const tracerError = { code: -32603, message: '"rate limit"\n    at result (unknown at :1:27)' };
    h.upstream.script(P1, failing(tracerError));
    const response = await h.rpc(traceCall);
    // The node's own error, word for word: the gateway's fallback shares the code -32603 but
    // says "all providers failed", and would follow a retry or a blacklist.
    expect(response.json.error).toEqual(tracerError);
    expect(response.status).toBe(200);
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("holds: a provider's rate limit coded -32005 on a traced call still blacklists it", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, failing({ code: -32005, message: "rate limit exceeded" }));
    await h.rpc(traceCall);
    expect(h.store.healthWrites.map((write) => write.next.reason)).toContain("rate_limit");
  });
});

describe("a method name the caller makes up is not the node's word about the chain", () => {
  /** geth's answer to a method it does not have: the name, echoed. */
  const geth = (request: UpstreamRequest) => {
    const sent = JSON.parse(request.body) as SentCall;
    return answer(
      JSON.stringify({
        jsonrpc: "2.0",
        id: sent.id,
        error: {
          code: -32601,
          message: `the method ${sent.method} does not exist/is not available`,
        },
      }),
    );
  };

  it("regression: a made-up method named 'network-x', echoed by geth ('the method network-x does not exist/is not available'), read as the provider not serving the chain and blacklisted it for 24 hours; now it is a method the provider does not have", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, geth);
    const response = await h.rpc('{"jsonrpc":"2.0","id":1,"method":"network-x","params":[]}');
    expect(response.json.error).toMatchObject({ code: -32601 });
    expect(h.store.healthWrites.map((write) => write.next.reason)).not.toContain(
      "chain_unavailable",
    );
  });
});
