import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../functions/core/ports.ts";
import type { HarnessProviders } from "../support/gateway-harness.ts";
import { answer, resultFor, type SentCall } from "../support/scripted-upstream.ts";
import { settledChainHarness } from "../support/settled-chain-harness.ts";

/**
 * Attacks on the rules attack-13 added: words a caller writes into a call, made-up hashes, ids
 * sent as positions. Scripted upstream, in-memory state, a test clock: nothing here sleeps.
 */

const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers) {
  const outcomes: Array<{ provider: string; ok: boolean }> = [];
  const h = settledChainHarness(providers, {
    recordOutcome: (_, provider, ok) => outcomes.push({ provider, ok }),
  });
  return { ...h, outcomes };
}

/** A node whose answer to each call is `reply(call)`. */
const node = (reply: (call: SentCall) => unknown) => resultFor((_, call) => reply(call));

const two: Providers = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];

/** A node that answers every call with `error`, as anvil answers a call whose code reverts. */
const failing = (error: unknown) => (request: UpstreamRequest) => {
  const parsed = JSON.parse(request.body) as SentCall | SentCall[];
  const one = (call: SentCall) => JSON.stringify({ jsonrpc: "2.0", id: call.id, error });
  return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
};

const ethCall = (extra: Record<string, string>) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "eth_call",
    params: [{ data: "0x6000", ...extra }, "latest"],
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

describe("a single call's answer is the one with its id", () => {
  const balance = (id: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000007","0x6e"]}`;
  /** Answers every call as if it were another client's request number 0. */
  const confused = () => answer('{"jsonrpc":"2.0","id":0,"result":"0xbad"}');

  it("regression: a single call sent with the caller's own id took an answer naming id 0 (its position, which it did not go with), another request's answer; now it goes to the next provider", async () => {
    const h = harness(two);
    h.upstream.script(P1, confused).script(
      P2,
      node(() => "0x5"),
    );
    const response = await h.gatewayRpc(balance('"abc"'));
    expect(response.body).toBe('{"jsonrpc":"2.0","id":"abc","result":"0x5"}');
  });

  it("holds: a call whose id nodes may not read goes with its position, and the answer naming it is taken", async () => {
    const h = harness(two);
    h.upstream.script(P1, confused).script(
      P2,
      node(() => "0x5"),
    );
    const response = await h.gatewayRpc(balance("1E2"));
    expect(response.body).toBe('{"jsonrpc":"2.0","id":1E2,"result":"0xbad"}');
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
