import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import type { HedgeTimer, UpstreamRequest } from "../../../../functions/core/ports.ts";
import {
  everyoneInQuorum,
  gatewayHarness,
  type HarnessNetwork,
} from "../../../support/gateway-harness.ts";
import { recordingTelemetry } from "../../../support/recording-telemetry.ts";
import { answer, held, ScriptedUpstream } from "../../../support/scripted-upstream.ts";

/**
 * Read consensus through the request pipeline (docs/behaviour.md §17), on scripted providers
 * and the in-memory state store with a test clock: who is asked, what the caller gets, who is
 * found in the minority, and what it costs in upstream calls.
 */

const NOW = 1_800_000_000_000;
const URL = (name: string) => `http://${name}.test/`;
const hash = (digit: string) => `0x${digit.repeat(64)}`;
const hex = (n: number) => `0x${n.toString(16)}`;
const ADDRESS = "0x00000000000000000000000000000000000000aa";
const TX = hash("7");

/** finalized 100, latest 120, confirmed a second ago. */
const HEAD: ChainHead = {
  latest: { number: 120, hash: hash("c") },
  safe: { number: 110, hash: hash("b") },
  finalized: { number: 100, hash: hash("a") },
  served: { block: 120, at: NOW - 1000 },
  previousServed: null,
  updatedAt: NOW - 1000,
  reorgSeenAt: 0,
};

interface SentCall {
  readonly id: unknown;
  readonly method: string;
  readonly params: unknown[];
}

/** What a provider answers one call: a result, or `{ error }`. */
type Answers = (call: SentCall) => unknown;

const RECEIPT = { transactionHash: TX, blockNumber: hex(100), blockHash: hash("a"), status: "0x1" };

/** The honest chain: a balance of 1000 wei, a receipt, a call that returns 0x2a. */
const honest: Answers = (call) => {
  switch (call.method) {
    case "eth_getBalance":
      return hex(1000);
    case "eth_getTransactionReceipt":
      return RECEIPT;
    case "eth_call":
      return "0x2a";
    case "eth_chainId":
      return "0x1";
    default:
      return null;
  }
};

/** A provider that answers like `answers`, every call of a batch on its own, keeping ids. */
function provider(answers: Answers, elapsedMs = 5) {
  return (request: UpstreamRequest) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (call: SentCall) => {
      const given = answers(call) as { error?: unknown } | null;
      const member =
        given !== null && typeof given === "object" && "error" in given
          ? { error: given.error }
          : { result: given };
      return JSON.stringify({ jsonrpc: "2.0", id: call.id, ...member });
    };
    return answer(
      Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed),
      elapsedMs,
    );
  };
}

function harness(
  scripts: Record<string, Answers>,
  consensus: NonNullable<HarnessNetwork["consensus"]> = {
    methods: ["eth_getBalance", "eth_getTransactionReceipt", "eth_call"],
  },
  overrides: HarnessNetwork = {},
  hedgeTimer?: HedgeTimer,
) {
  const telemetry = recordingTelemetry();
  const names = Object.keys(scripts);
  // Priorities in the order given, so the first two are asked first.
  const providers = names.map((name, index) => ({
    name,
    url: URL(name),
    priority: names.length - index,
  }));
  const h = gatewayHarness({
    providers,
    network: { consensus, hedge: { max_ratio: 0 }, cache: false, ...overrides },
    stateCache: { ttlMs: 0, maxStaleMs: -1 },
    now: NOW,
    upstream: () => {
      const upstream = new ScriptedUpstream();
      for (const name of names) upstream.script(URL(name), provider(scripts[name] as Answers));
      return upstream;
    },
    deps: hedgeTimer === undefined ? { telemetry } : { telemetry, hedgeTimer },
  });
  h.store.setHead("net", HEAD);
  everyoneInQuorum(h.store, providers, {
    head: 120,
    timestamp: NOW / 1000 - 1,
    computedAt: NOW - 1000,
  });
  const calls = () =>
    Object.fromEntries(names.map((name) => [name, h.upstream.callsTo(URL(name))]));
  const health = async (name: string) => (await h.store.readNetwork("net")).providers.get(name);
  const metric = (name: string) => telemetry.counts.filter((count) => count.name === name);
  return { ...h, telemetry, calls, health, metric };
}

const call = (id: unknown, method: string, params: unknown[]) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const balance = (id: unknown, block = hex(50)) => call(id, "eth_getBalance", [ADDRESS, block]);
const receipt = (id: unknown) => call(id, "eth_getTransactionReceipt", [TX]);
const parse = (body: string) =>
  JSON.parse(body) as {
    id: unknown;
    result?: unknown;
    error?: { code: number; message: string; data?: unknown };
  };

const offByOne: Answers = (call) => (call.method === "eth_getBalance" ? hex(1001) : honest(call));

describe("read consensus in the pipeline", () => {
  it("two honest providers are asked at once and agree: one of their answers, byte for byte, with the caller's id; two upstream calls", async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest });
    const response = await h.rpc(balance("caller-ü"));
    expect(parse(response.body)).toEqual({ jsonrpc: "2.0", id: "caller-ü", result: hex(1000) });
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    expect(response.headers["x-gateway-attempts"]).toBe("2");
    expect(h.calls()).toEqual({ p1: 1, p2: 1, p3: 0 });
    expect(h.metric("consensus_calls").map((count) => count.dimensions.outcome)).toEqual([
      "agreed",
    ]);
  });

  it("an agreed answer is cached as usual: a finalized read pays consensus once", async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest }, undefined, { cache: true });
    await h.rpc(balance(1));
    const again = await h.rpc(balance(2));
    expect(again.headers["x-gateway-cache"]).toBe("hit-memory");
    expect(again.headers["x-gateway-consensus"]).toBe("cached");
    expect(h.calls()).toEqual({ p1: 1, p2: 1, p3: 0 });
  });

  it("a balance off by one wei: a third provider decides, the liar gets an inconsistent strike, the honest ones none", async () => {
    const h = harness({ p1: honest, liar: offByOne, p3: honest });
    const response = await h.rpc(balance(7));
    expect(parse(response.body).result).toBe(hex(1000));
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    expect(h.calls()).toEqual({ p1: 1, liar: 1, p3: 1 });
    expect(await h.health("liar")).toMatchObject({ strikes: 1, reason: "inconsistent" });
    expect((await h.health("liar"))?.consensus).toMatchObject({ count: 1 });
    expect(await h.health("p1")).toBeUndefined();
    expect(await h.health("p3")).toBeUndefined();
    expect(h.metric("consensus_minority").map((count) => count.dimensions.provider)).toEqual([
      "liar",
    ]);
    expect(h.container.consensus.counts("net").get("liar")).toEqual({
      agreed: 0,
      minority: 1,
      disputed: 0,
    });
  });

  it("on_dispute error: the caller gets a clear error at once, nobody is struck, nothing is cached", async () => {
    const h = harness(
      { p1: honest, liar: offByOne, p3: honest },
      { methods: ["eth_getBalance"], on_dispute: "error" },
    );
    const response = await h.rpc(balance(7));
    const error = parse(response.body).error;
    expect(error?.code).toBe(-32603);
    expect(error?.message).toMatch(/^consensus: providers disagree on eth_getBalance at block 50/);
    expect(response.headers["x-gateway-consensus"]).toBe("disputed");
    expect(h.calls()).toEqual({ p1: 1, liar: 1, p3: 0 });
    expect(await h.health("liar")).toBeUndefined();
    await h.rpc(balance(8));
    expect(h.calls()).toEqual({ p1: 2, liar: 2, p3: 0 });
  });

  it("three different answers: no majority, a clear error naming each answer, nothing cached", async () => {
    const h = harness({
      p1: honest,
      a: offByOne,
      b: (c) => (c.method === "eth_getBalance" ? hex(5) : honest(c)),
    });
    const response = await h.rpc(balance(1));
    const error = parse(response.body).error;
    expect(error?.message).toContain("no answer has a majority of 2");
    expect(error?.data).toMatchObject({ consensus: "disputed" });
    expect((error?.data as { answers?: unknown[] } | undefined)?.answers).toHaveLength(3);
    expect(response.headers["x-gateway-consensus"]).toBe("disputed");
    for (const name of ["p1", "a", "b"]) expect(await h.health(name)).toBeUndefined();
    expect(h.container.consensus.counts("net").get("p1")).toEqual({
      agreed: 0,
      minority: 0,
      disputed: 1,
    });
  });

  it("reverts agree whatever code and wording each client uses", async () => {
    const data = "0x08c379a0";
    const geth: Answers = (c) =>
      c.method === "eth_call"
        ? { error: { code: 3, message: "execution reverted: nope", data } }
        : honest(c);
    const nethermind: Answers = (c) =>
      c.method === "eth_call"
        ? { error: { code: -32015, message: "VM execution error.", data: "revert: nope" } }
        : honest(c);
    const h = harness({ geth, nethermind, p3: honest });
    const response = await h.rpc(call(1, "eth_call", [{ to: ADDRESS, data: "0x" }, hex(50)]));
    expect(parse(response.body).error).toEqual({
      code: 3,
      message: "execution reverted: nope",
      data,
    });
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    expect(h.calls()).toEqual({ geth: 1, nethermind: 1, p3: 0 });
  });

  it("not found yet is no vote for null: another provider confirms the receipt, and the one without it is not struck", async () => {
    const lagging: Answers = (c) => (c.method === "eth_getTransactionReceipt" ? null : honest(c));
    const h = harness({ lagging, p2: honest, p3: honest });
    const response = await h.rpc(receipt(1));
    expect(parse(response.body).result).toEqual(RECEIPT);
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    expect(await h.health("lagging")).toBeUndefined();
  });

  it("a receipt's status flipped: found out by the third provider", async () => {
    const flipped: Answers = (c) =>
      c.method === "eth_getTransactionReceipt" ? { ...RECEIPT, status: "0x0" } : honest(c);
    const h = harness({ p1: honest, flipped, p3: honest });
    const response = await h.rpc(receipt(1));
    expect(parse(response.body).result).toEqual(RECEIPT);
    expect(await h.health("flipped")).toMatchObject({ reason: "inconsistent" });
  });

  it("a rate limit is no vote: the participant's retry stays in its own share of providers", async () => {
    const limited: Answers = () => ({ error: { code: -32005, message: "rate limit exceeded" } });
    const h = harness({ p1: honest, limited, p3: honest, p4: honest });
    const response = await h.rpc(balance(1));
    expect(parse(response.body).result).toBe(hex(1000));
    // p1 and limited first; limited's share is [limited, p4], p1's is [p1, p3].
    expect(h.calls()).toEqual({ p1: 1, limited: 1, p3: 0, p4: 1 });
  });

  it("a batch mixing consensus and plain calls: each provider gets one batch", async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest });
    const response = await h.rpc(
      `[${call(1, "eth_chainId", [])},${balance(2)},${balance(3, hex(60))}]`,
    );
    const answers = JSON.parse(response.body) as Array<{ id: number; result: string }>;
    expect(answers.map((a) => [a.id, a.result])).toEqual([
      [1, "0x1"],
      [2, hex(1000)],
      [3, hex(1000)],
    ]);
    expect(response.headers["x-gateway-consensus"]).toBe("none,agreed-2,agreed-2");
    expect(h.calls()).toEqual({ p1: 1, p2: 1, p3: 0 });
  });

  it("a call about pending names no block: one provider answers it, as any call", async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest });
    const response = await h.rpc(balance(1, "pending"));
    expect(response.headers["x-gateway-consensus"]).toBe("unpinned");
    expect(h.calls()).toEqual({ p1: 1, p2: 0, p3: 0 });
  });

  it("a call about latest is pinned first, then agreed on", async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest });
    const response = await h.rpc(balance(1, "latest"));
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    const sent = JSON.parse(h.upstream.calls.get(URL("p2"))?.[0]?.body ?? "{}") as SentCall;
    expect(sent.params[1]).toBe(hex(120));
  });

  it("in the minority minority_limit times within the window: left out of consensus routing, its ballots go to the others", async () => {
    const h = harness(
      { p1: honest, liar: offByOne, p3: honest, p4: honest },
      {
        methods: ["eth_getBalance"],
        minority_limit: 2,
        minority_window_seconds: 600,
        sit_out_seconds: 1800,
      },
      { cooldown_seconds: { inconsistent: 1 } },
    );
    await h.rpc(balance(1, hex(10)));
    h.advance(2000);
    await h.rpc(balance(2, hex(11)));
    expect((await h.health("liar"))?.consensus?.sitOutUntil).toBeGreaterThan(NOW);
    h.advance(2000);
    const before = h.calls().liar ?? 0;
    // Out of its blacklist, but sitting out: a plain call may go to it, a consensus call not.
    for (let block = 20; block < 30; block++) await h.rpc(balance(block, hex(block)));
    expect(h.calls().liar).toBe(before);
    await h.rpc(call(9, "eth_getStorageAt", [ADDRESS, "0x0", hex(5)]));
    expect(h.calls().liar).toBe(before + 1);
  });

  it("the extra participants count in max_upstream_calls: past it, the call gets a clear error, not the first answer", async () => {
    const h = harness(
      { p1: honest, liar: offByOne, p3: honest },
      { methods: ["eth_getBalance"] },
      { max_upstream_calls: 2, max_attempts: 1 },
    );
    const response = await h.rpc(balance(1));
    expect(parse(response.body).error?.message).toMatch(/^consensus: providers disagree/);
    expect(h.calls()).toEqual({ p1: 1, liar: 1, p3: 0 });
  });

  it("fewer providers left than agreement needs: a clear error naming it", async () => {
    const down: Answers = () => ({ error: { code: -32005, message: "rate limit exceeded" } });
    const h = harness({ p1: honest, p2: down });
    const response = await h.rpc(balance(1));
    const error = parse(response.body).error;
    expect(error?.message).toMatch(
      /needs 2 providers to agree, and only 1 gave this answer; last error: p2: /,
    );
    expect(response.headers["x-gateway-consensus"]).toBe("short");
  });

  it('regression: a lone consensus notification went to two providers and, with no answer to compare, got a 502 "all providers failed"; now it goes as any notification: one provider, 204', async () => {
    const h = harness({ p1: honest, p2: honest, p3: honest });
    const response = await h.rpc(
      JSON.stringify({ jsonrpc: "2.0", method: "eth_getBalance", params: [ADDRESS, hex(50)] }),
    );
    expect(response.status).toBe(204);
    expect(h.calls()).toEqual({ p1: 1, p2: 0, p3: 0 });
  });

  it("regression: an eth_call whose code reads what nodes legitimately differ on (gasleft() under each node's gas cap) let a caller get an honest provider struck as inconsistent; its minority is now counted, not penalised", async () => {
    const otherCap: Answers = (c) => (c.method === "eth_call" ? "0x2b" : honest(c));
    const h = harness({ p1: honest, otherCap, p3: honest });
    const response = await h.rpc(call(1, "eth_call", [{ to: ADDRESS, data: "0x" }, hex(50)]));
    expect(parse(response.body).result).toBe("0x2a");
    expect(await h.health("otherCap")).toBeUndefined();
    expect(h.container.consensus.counts("net").get("otherCap")).toMatchObject({ minority: 1 });
    expect(h.metric("consensus_minority")).toHaveLength(1);
  });

  it("regression: a batch of 40 balances the liar lied on wrote 40 inconsistent incidents (40 compare-and-set rounds on one item); now one per provider per request, each vote still counted", async () => {
    const h = harness({ p1: honest, liar: offByOne, p3: honest });
    const body = `[${Array.from({ length: 40 }, (_, i) => balance(i, hex(10 + i))).join(",")}]`;
    const response = await h.rpc(body);
    const answers = JSON.parse(response.body) as Array<{ result: string }>;
    expect(answers.every((a) => a.result === hex(1000))).toBe(true);
    expect(h.store.healthWrites.filter((w) => w.provider === "liar")).toHaveLength(1);
    expect(await h.health("liar")).toMatchObject({ strikes: 1, consensus: { count: 1 } });
    expect(h.container.consensus.counts("net").get("liar")?.minority).toBe(40);
    expect(h.metric("consensus_minority")).toHaveLength(40);
  });

  it("regression: a call about latest pinned to a served head every provider is behind failed 'all providers failed'; now it goes again as written, as any call (§10.4), one provider's answer", async () => {
    const behind: Answers = (c) =>
      c.method === "eth_getBalance" && c.params[1] === hex(125)
        ? { error: { code: -32000, message: "header not found" } }
        : honest(c);
    const h = harness({ p1: behind, p2: behind, p3: behind });
    h.store.setHead("net", { ...HEAD, served: { block: 125, at: NOW - 1000 } });
    everyoneInQuorum(
      h.store,
      ["p1", "p2", "p3"].map((name) => ({ name, url: URL(name) })),
      {
        head: 125,
        timestamp: NOW / 1000 - 1,
        computedAt: NOW - 1000,
      },
    );
    const response = await h.rpc(balance(1, "latest"));
    expect(parse(response.body).result).toBe(hex(1000));
    expect(response.headers["x-gateway-consensus"]).toBe("unpinned");
  });

  it("a hedge goes within the participant's own share: a slow provider's hedge is another provider than the other participant's", async () => {
    const timer = manualTimer();
    const h = harness({ p1: honest, p2: honest, p3: honest }, undefined, HEDGED, timer.timer);
    await h.rpc(call(0, "eth_chainId", []));
    const slow = held();
    h.upstream.script(URL("p1"), slow.script);
    const pending = h.rpc(balance(1));
    await timer.fire();
    const response = await pending;
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    // p1's share is [p1, p3]: its hedge went to p3, never to p2, which voted once already.
    expect(h.calls()).toEqual({ p1: 2, p2: 1, p3: 1 });
    expect(h.upstream.aborted).toHaveLength(1);
  });

  it("with a participant's share of one provider, a slow provider is waited for: no hedge can make another provider vote twice", async () => {
    const timer = manualTimer();
    const h = harness({ p1: honest, p2: honest }, undefined, HEDGED, timer.timer);
    await h.rpc(call(0, "eth_chainId", []));
    const slow = held();
    h.upstream.script(URL("p1"), slow.script);
    const waitsBefore = timer.waits.length;
    const pending = h.rpc(balance(1));
    await until(() => slow.waiting === 1);
    slow.release(answer(JSON.stringify({ jsonrpc: "2.0", id: 1, result: hex(1000) })));
    const response = await pending;
    expect(response.headers["x-gateway-consensus"]).toBe("agreed-2");
    expect(timer.waits).toHaveLength(waitsBefore);
    expect(h.calls()).toEqual({ p1: 2, p2: 1 });
  });
});

const HEDGED: HarnessNetwork = { hedge: { max_ratio: 1, min_ms: 150, max_ms: 300 } };

/** A hedge timer the test fires; the turn of the event loop a hedge takes after it passes at once. */
function manualTimer() {
  const waits: Array<{ fire: () => void; cancelled: boolean }> = [];
  const timer: HedgeTimer = (ms) => {
    if (ms === 0) return { done: Promise.resolve(), cancel: () => undefined };
    let fire: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      fire = resolve;
    });
    const wait = { fire: () => fire(), cancelled: false };
    waits.push(wait);
    return {
      done,
      cancel: () => {
        wait.cancelled = true;
      },
    };
  };
  return {
    timer,
    waits,
    async fire() {
      await until(() => waits.some((wait) => !wait.cancelled));
      waits
        .filter((wait) => !wait.cancelled)
        .at(-1)
        ?.fire();
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let turn = 0; turn < 1000 && !condition(); turn++) await new Promise(setImmediate);
  if (!condition()) throw new Error("the pipeline never got there");
}
