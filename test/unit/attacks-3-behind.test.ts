import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../functions/core/chain/chain-head.ts";
import type { UpstreamRequest } from "../../functions/core/ports.ts";
import {
  everyoneInQuorum,
  gatewayHarness,
  type HarnessNetwork,
  type HarnessProviders,
} from "../support/gateway-harness.ts";
import { MemoryTransactionLedger } from "../support/memory-ledger.ts";
import { answer } from "../support/scripted-upstream.ts";

/**
 * Attacks on the unpinned resend and on "behind is not a failed request" (docs/behaviour.md
 * §5.3, §10.4, §10.5): providers that answer from behind for every pinned call, forever, and
 * what that costs, hands out, and does to the quorum stats. Scripted upstream, in-memory
 * state, a test clock: nothing here sleeps.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const P3 = "http://p3.test/";
const hex = (n: number) => `0x${n.toString(16)}`;

type Providers = HarnessProviders;

/** The served head 120, published long enough ago that every container answers it. */
const HEAD: ChainHead = {
  latest: { number: 120, hash: null },
  safe: null,
  finalized: null,
  served: { block: 120, at: NOW - 5_000 },
  previousServed: null,
  updatedAt: NOW - 5_000,
  reorgSeenAt: 0,
};

function harness(providers: Providers, overrides: HarnessNetwork = {}) {
  /** What request stats (failing often) were told, attempt by attempt. */
  const outcomes: Array<{ provider: string; ok: boolean }> = [];
  const { store, upstream, rpc } = gatewayHarness({
    providers,
    network: overrides,
    now: NOW,
    deps: {
      ledger: new MemoryTransactionLedger(),
      recordOutcome: (_, provider, ok) => outcomes.push({ provider, ok }),
    },
  });
  store.setHead("net", HEAD);
  // The monitor saw every provider at 118 two block times ago: each can have reached 120.
  everyoneInQuorum(store, providers, {
    head: 118,
    timestamp: NOW / 1000 - 24,
    computedAt: NOW - 13_000,
  });
  const failedRequests = (provider: string) =>
    outcomes.filter((outcome) => outcome.provider === provider && !outcome.ok).length;
  return { store, upstream, rpc, outcomes, failedRequests };
}

interface SentCall {
  readonly id: unknown;
  readonly method: string;
  readonly params: unknown[];
}

/** A node whose answer to each call is `reply(call)`: a result, or an error object. */
function node(reply: (call: SentCall) => { result: unknown } | { error: object }) {
  return (request: UpstreamRequest) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (call: SentCall) => JSON.stringify({ jsonrpc: "2.0", id: call.id, ...reply(call) });
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}

const HEADER_NOT_FOUND = { error: { code: -32000, message: "header not found" } };

/** A provider that says "header not found" to every call naming a block number, forever. */
const liar = node((call) =>
  call.params.some((param) => typeof param === "string" && /^0x[0-9a-f]{1,8}$/.test(param))
    ? HEADER_NOT_FOUND
    : { result: "0x1" },
);
/** A provider at the served head: every block up to 120 exists. */
const honest = node(() => ({ result: "0x2" }));
/** A provider that is behind for everything, tag or number. */
const syncing = node(() => HEADER_NOT_FOUND);

const ADDRESS = "0x0000000000000000000000000000000000000001";
const balance = (id: unknown, block: string, address = ADDRESS) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [address, block] });
/** Another account per call, so no answer comes from the cache. */
const account = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
const batch = (...calls: string[]) => `[${calls.join(",")}]`;

const two: Providers = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];
const three: Providers = [...two, { name: "p3", url: P3, priority: 0 }];

describe("a provider answering from behind for every pinned call, forever", () => {
  it("regression: its answers from behind, while another provider answered the same block, were no failed requests, so it stayed in quorum for ever and cost every call an extra attempt; now each counts as a failed request ('failing often')", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, honest);
    for (let id = 0; id < 20; id++) {
      const response = await h.rpc(balance(id, "latest", account(id)));
      expect(JSON.parse(response.body).result).toBe("0x2");
    }
    expect(h.failedRequests("p1")).toBe(20);
    expect(h.failedRequests("p2")).toBe(0);
  });

  it("every provider answering eth_blockNumber behind the served head (above the chain after a revert): the served head answers, and nobody's stats count it", async () => {
    const h = harness(two);
    const behindHead = node(() => ({ result: hex(110) }));
    h.upstream.script(P1, behindHead).script(P2, behindHead);
    // Published within a block time: the served head is answered without a provider; older, a
    // provider is asked first.
    h.store.setHead("net", { ...HEAD, served: { block: 120, at: NOW - 20_000 } });
    const response = await h.rpc(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    );
    expect(JSON.parse(response.body).result).toBe(hex(120));
    const noPolls = { headPolls: false };
    expect(h.upstream.callsTo(P1, noPolls) + h.upstream.callsTo(P2, noPolls)).toBe(2);
    expect(h.outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
  });

  it("it still gets no strike: behind is not broken", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, honest);
    await h.rpc(balance(1, "latest"));
    expect(h.store.healthWrites).toEqual([]);
  });

  it("every provider behind the pinned block (a served head above the chain): nobody's stats count it, and the resend answers", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, liar);
    const response = await h.rpc(balance(1, "latest"));
    expect(JSON.parse(response.body).result).toBe("0x1");
    expect(h.failedRequests("p1")).toBe(0);
    expect(h.failedRequests("p2")).toBe(0);
  });

  it("a block every provider is behind, named by the caller: nobody's stats count it", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, liar);
    await h.rpc(balance(1, hex(120)));
    expect(h.outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
  });
});

describe("what the resend costs", () => {
  it("a lone provider behind for everything: two upstream calls, an error, nothing cached", async () => {
    const h = harness([{ name: "p1", url: P1 }]);
    h.upstream.script(P1, syncing);
    for (const id of [1, 2]) {
      const response = await h.rpc(balance(id, "latest"));
      expect(JSON.parse(response.body).error.code).toBe(-32000);
    }
    expect(h.upstream.callsTo(P1)).toBe(4);
  });

  it("three providers behind for everything: each is asked pinned and as written once, within max_upstream_calls", async () => {
    const h = harness(three);
    for (const url of [P1, P2, P3]) h.upstream.script(url, syncing);
    const response = await h.rpc(balance(1, "latest"));
    expect(JSON.parse(response.body).error).toBeDefined();
    expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([2, 2, 2]);
  });

  it("max_upstream_calls bounds the pinned walk and the resend together", async () => {
    const h = harness(three, { max_upstream_calls: 4 });
    for (const url of [P1, P2, P3]) h.upstream.script(url, syncing);
    const response = await h.rpc(balance(1, "latest"));
    expect(JSON.parse(response.body).error).toBeDefined();
    expect([P1, P2, P3].reduce((sum, url) => sum + h.upstream.callsTo(url), 0)).toBe(4);
  });

  it("a batch of 50 pinned reads, every provider behind: one resend per provider, as one batch", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, liar);
    const calls = Array.from({ length: 50 }, (_, id) => balance(id, "latest"));
    const response = await h.rpc(batch(...calls));
    const answers = JSON.parse(response.body) as Array<{ id: number; result: string }>;
    expect(answers.map((member) => member.result)).toEqual(calls.map(() => "0x1"));
    expect(answers.map((member) => member.id)).toEqual(calls.map((_, id) => id));
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBe(3);
  });

  it("a batch mixing a pinned tag and a caller-named block: only the pinned member is resent, each answer in its place", async () => {
    const h = harness(two);
    h.upstream.script(P1, liar).script(P2, liar);
    const response = await h.rpc(batch(balance(1, "latest"), balance(2, hex(120))));
    const [pinned, named] = JSON.parse(response.body) as Array<Record<string, unknown>>;
    expect(pinned).toMatchObject({ id: 1, result: "0x1" });
    expect(named).toMatchObject({ id: 2, error: { code: -32000 } });
    const resent = h.upstream.calls.get(P1)?.at(-1)?.body ?? "";
    expect(resent).toContain('"latest"');
    expect(resent).not.toContain(hex(120));
  });

  it("a notification about latest, every provider behind: resent at most once per provider, and no answer", async () => {
    const h = harness(two);
    h.upstream.script(P1, syncing).script(P2, syncing);
    const notification = JSON.stringify({
      jsonrpc: "2.0",
      method: "eth_getBalance",
      params: [ADDRESS, "latest"],
    });
    const response = await h.rpc(notification);
    expect(response.body).toBe("");
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBeLessThanOrEqual(4);
  });
});

describe("what is and is not resent", () => {
  const logs = (id: unknown, from: string, to: string) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id,
      method: "eth_getLogs",
      params: [{ fromBlock: from, toBlock: to, address: ADDRESS }],
    });

  it("eth_getLogs about latest, every provider behind: served apart and never resent as written, so nothing is sent twice", async () => {
    const h = harness(two);
    h.upstream.script(P1, syncing).script(P2, syncing);
    const response = await h.rpc(logs(1, "latest", "latest"));
    expect(JSON.parse(response.body).error).toBeDefined();
    for (const url of [P1, P2]) {
      const bodies = (h.upstream.calls.get(url) ?? []).map((request) => request.body);
      expect(bodies.filter((body) => body.includes('"latest"'))).toEqual([]);
      expect(bodies).toHaveLength(1);
    }
  });

  it("safe and finalized are resent as written too, each to its own tag", async () => {
    const h = harness(two);
    h.store.setHead("net", {
      ...HEAD,
      safe: { number: 110, hash: null },
      finalized: { number: 100, hash: null },
    });
    h.upstream.script(P1, liar).script(P2, liar);
    const response = await h.rpc(batch(balance(1, "safe"), balance(2, "finalized")));
    expect(JSON.parse(response.body)).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0x1" },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
    ]);
    const resent = h.upstream.calls.get(P1)?.at(-1)?.body ?? "";
    expect(resent).toContain('"safe"');
    expect(resent).toContain('"finalized"');
  });

  it("a block object (EIP-1898) naming latest is not pinned, so it is sent once", async () => {
    const h = harness(two);
    h.upstream.script(P1, honest);
    const call = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_call",
      params: [{ to: ADDRESS, data: "0x" }, { blockNumber: "latest" }],
    });
    await h.rpc(call);
    expect(h.upstream.calls.get(P1)?.map((r) => r.body)).toEqual([call]);
  });

  it("the resend starts no attempt after the request's deadline", async () => {
    const h = harness(two, { request_deadline_ms: 1_000, request_timeout_ms: 1_000 });
    const slowBehind = (request: UpstreamRequest) => ({ ...syncing(request), elapsedMs: 600 });
    h.upstream.script(P1, slowBehind).script(P2, slowBehind);
    await h.rpc(balance(1, "latest"));
    const noPolls = { headPolls: false };
    expect(h.upstream.callsTo(P1, noPolls) + h.upstream.callsTo(P2, noPolls)).toBe(2);
  });
});
