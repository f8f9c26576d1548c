import { describe, expect, it } from "vitest";
import type { Telemetry } from "../../../../functions/core/ports.ts";
import {
  everyoneInQuorum,
  gatewayHarness,
  type HarnessProviders,
} from "../../../support/gateway-harness.ts";
import { answer, type Script, type SentCall } from "../../../support/scripted-upstream.ts";

/**
 * History-aware routing through the request pipeline (docs/behaviour.md §16): full nodes that
 * refuse old state, an archive that keeps it, and what the gateway learns, routes, answers and
 * never penalises. Scripted providers, the in-memory store, a test clock.
 */

const NOW = 1_800_000_000_000;
const HEAD = 1000;
const FULL1 = "http://full1.test/";
const FULL2 = "http://full2.test/";
const ARCHIVE = "http://archive.test/";
const ADDRESS = "0x00000000000000000000000000000000000000aa";
const hex = (n: number) => `0x${n.toString(16)}`;

/** A node at HEAD: state (balance = block number) for blocks from `keepsFrom`, else `refusal`. */
function node(keepsFrom: number, refusal: { code: number; message: string }): Script {
  return (request) => {
    const parsed = JSON.parse(request.body) as SentCall | SentCall[];
    const one = (call: SentCall) => {
      const block = Number.parseInt(String(call.params[1] ?? hex(HEAD)), 16);
      if (call.method === "eth_getBalance" && block < keepsFrom) {
        return JSON.stringify({ jsonrpc: "2.0", id: call.id, error: refusal });
      }
      return JSON.stringify({ jsonrpc: "2.0", id: call.id, result: hex(block) });
    };
    return answer(Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed));
  };
}

const GETH = { code: -32000, message: "missing trie node 5f3a9c (path )" };
const RETH = {
  code: 4444,
  message: "pruned history unavailable: requested 5, earliest available 936",
};

function counting(): Telemetry & {
  counts: Array<{ name: string; dimensions: Record<string, string> }>;
} {
  const counts: Array<{ name: string; dimensions: Record<string, string> }> = [];
  return {
    counts,
    log: () => undefined,
    count: (name, dimensions) => counts.push({ name, dimensions }),
    measure: () => undefined,
  };
}

function scene(providers: HarnessProviders, network: Record<string, unknown> = {}) {
  const telemetry = counting();
  const outcomes: Array<{ provider: string; ok: boolean }> = [];
  const h = gatewayHarness({
    providers,
    network,
    now: NOW,
    deps: { telemetry, recordOutcome: (_, provider, ok) => outcomes.push({ provider, ok }) },
  });
  everyoneInQuorum(h.store, providers, { head: HEAD, timestamp: NOW / 1000, computedAt: NOW });
  h.upstream.script(FULL1, node(HEAD - 64, GETH)).script(FULL2, node(HEAD - 64, RETH));
  h.upstream.script(ARCHIVE, node(0, GETH));
  const balanceAt = (block: number, id = 1) =>
    JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [ADDRESS, hex(block)] });
  return { ...h, telemetry, outcomes, balanceAt };
}

const MIXED: HarnessProviders = [
  { name: "full1", url: FULL1, priority: 3 },
  { name: "full2", url: FULL2, priority: 2 },
  { name: "archive", url: ARCHIVE, priority: 1 },
];

describe("old state on a mixed fleet (docs/behaviour.md §16)", () => {
  it("regression: an old-state read got the full node's 'missing trie node' (0 of 20 served); now the archive serves it, and nobody is penalised", async () => {
    const s = scene(MIXED);
    const response = await s.rpc(s.balanceAt(100));
    expect(JSON.parse(response.body)).toEqual({ jsonrpc: "2.0", id: 1, result: hex(100) });
    expect(response.headers["x-gateway-provider"]).toBe("archive");
    expect([
      s.upstream.callsTo(FULL1),
      s.upstream.callsTo(FULL2),
      s.upstream.callsTo(ARCHIVE),
    ]).toEqual([1, 1, 1]);
    // No strike, no capability blacklist, no failed request for "failing often".
    const state = await s.store.readNetwork("net");
    expect([...state.providers.values()].every((health) => health.strikes === 0)).toBe(true);
    expect(state.capabilities.size).toBe(0);
    expect(s.outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
    expect(s.telemetry.counts.filter((count) => count.name === "retried_errors")).toEqual([]);
  });

  it("learns each full node's bound: later old reads go to the archive in one attempt", async () => {
    const s = scene(MIXED);
    await s.rpc(s.balanceAt(100));
    s.advance(2000); // past state_cache_ms: the next request reads what was shared
    const before = s.upstream.callsTo(ARCHIVE);
    for (let block = 90; block < 100; block++) {
      const response = await s.rpc(s.balanceAt(block));
      expect(JSON.parse(response.body).result).toBe(hex(block));
      expect(response.headers["x-gateway-attempts"]).toBe("1");
    }
    expect(s.upstream.callsTo(FULL1)).toBe(1);
    expect(s.upstream.callsTo(FULL2)).toBe(1);
    expect(s.upstream.callsTo(ARCHIVE) - before).toBe(10);
    const shared = (await s.store.readNetwork("net")).history;
    expect(shared.get("full1")?.learned.get("state")?.from).toBe(101);
    // reth named its oldest block: that is the bound, not the block after the refused one.
    expect(shared.get("full2")?.learned.get("state")?.from).toBe(936);
    expect(s.store.historyWrites.length).toBe(2);
  });

  it("regression: an indexer walking old blocks upward paid three calls a read (each full node refused every block above the last one it refused); now the first refusal sends every old read to the archive first", async () => {
    const s = scene(MIXED);
    await s.rpc(s.balanceAt(100));
    s.advance(2000);
    const before = s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2);
    for (let block = 101; block < 140; block++) {
      const response = await s.rpc(s.balanceAt(block));
      expect(JSON.parse(response.body).result).toBe(hex(block));
      expect(response.headers["x-gateway-provider"]).toBe("archive");
      expect(response.headers["x-gateway-attempts"]).toBe("1");
    }
    expect(s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2)).toBe(before);
  });

  it("keeps recent reads on the primaries", async () => {
    const s = scene(MIXED);
    await s.rpc(s.balanceAt(100));
    for (let block = HEAD - 20; block <= HEAD; block++) {
      const response = await s.rpc(s.balanceAt(block));
      expect(response.headers["x-gateway-provider"]).toBe("full1");
    }
    expect(s.upstream.callsTo(ARCHIVE)).toBe(1);
  });

  it("a refusal gives its attempt back: three pruned primaries before the archive, max_attempts 3", async () => {
    const FULL3 = "http://full3.test/";
    const s = scene([
      { name: "full1", url: FULL1, priority: 4 },
      { name: "full2", url: FULL2, priority: 3 },
      { name: "full3", url: FULL3, priority: 2 },
      { name: "archive", url: ARCHIVE, priority: 1 },
    ]);
    s.upstream.script(FULL3, node(HEAD - 64, GETH));
    const response = await s.rpc(s.balanceAt(5));
    expect(JSON.parse(response.body).result).toBe(hex(5));
  });

  it("a backup archive alone keeps the block: it serves that call while the primaries are healthy", async () => {
    const s = scene([
      { name: "full1", url: FULL1, priority: 2 },
      { name: "full2", url: FULL2, priority: 2 },
      { name: "archive", url: ARCHIVE, backup: true },
    ]);
    expect(JSON.parse((await s.rpc(s.balanceAt(100))).body).result).toBe(hex(100));
    s.advance(2000);
    const old = await s.rpc(s.balanceAt(50));
    expect(old.headers["x-gateway-provider"]).toBe("archive");
    expect(old.headers["x-gateway-attempts"]).toBe("1");
    const recent = await s.rpc(s.balanceAt(HEAD));
    expect(recent.headers["x-gateway-provider"]).not.toBe("archive");
  });

  it("configured bounds route the first old read to the archive at once", async () => {
    const s = scene([
      { name: "full1", url: FULL1, priority: 2, history: { state_blocks: 64 } },
      { name: "full2", url: FULL2, priority: 2, history: { state_blocks: 64 } },
      { name: "archive", url: ARCHIVE, priority: 1, archive: true },
    ]);
    const response = await s.rpc(s.balanceAt(3));
    expect(response.headers["x-gateway-attempts"]).toBe("1");
    expect(s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2)).toBe(0);
  });
});

describe("a provider configured to keep history that refuses it (docs/behaviour.md §16.2)", () => {
  const CONFIGURED: HarnessProviders = [
    { name: "full1", url: FULL1, priority: 2, history: { state_blocks: 64 } },
    { name: "full2", url: FULL2, priority: 2, history: { state_blocks: 64 } },
    { name: "archive", url: ARCHIVE, priority: 1, archive: true },
  ];

  it("regression: a configured archive's one refusal is no proof against the config: asked last, and a result forgets the lesson", async () => {
    const s = scene(CONFIGURED);
    let refusals = 1;
    const honest = node(0, GETH);
    s.upstream.script(ARCHIVE, (request, call) => {
      if (refusals-- > 0) return answer(JSON.stringify({ jsonrpc: "2.0", id: 1, error: GETH }));
      return honest(request, call);
    });
    const first = JSON.parse((await s.rpc(s.balanceAt(100))).body);
    expect(first.error.message).toMatch(/^state at block 0x64 is not available on any provider/);
    s.advance(2000);
    // The config says it keeps block 100: it is still asked (last), and serves it.
    const second = await s.rpc(s.balanceAt(100));
    expect(JSON.parse(second.body).result).toBe(hex(100));
    s.advance(2000);
    expect((await s.store.readNetwork("net")).history.get("archive")?.learned.has("state")).toBe(
      false,
    );
    const third = await s.rpc(s.balanceAt(50));
    expect(third.headers["x-gateway-attempts"]).toBe("1");
    expect(s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2)).toBe(0);
  });
});

describe("when no provider keeps the block (docs/behaviour.md §16.5)", () => {
  const FULLS: HarnessProviders = [
    { name: "full1", url: FULL1, priority: 2 },
    { name: "full2", url: FULL2, priority: 1 },
  ];

  it("one clear error naming the block and the resource, and no upstream asked again for it", async () => {
    const s = scene(FULLS);
    const answered = await s.rpc(s.balanceAt(0x1f4));
    const first = JSON.parse(answered.body);
    expect(first.error.code).toBe(-32000);
    // regression: the gateway's own error was attributed to the last provider that refused.
    expect(answered.headers["x-gateway-provider"] ?? "").toBe("");
    expect(first.error.message).toMatch(
      /^state at block 0x1f4 is not available on any provider of net/,
    );
    expect(first.error.data).toMatchObject({ resource: "state", block: "0x1f4" });
    const calls = s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2);
    for (let i = 0; i < 50; i++) {
      const again = JSON.parse((await s.rpc(s.balanceAt(0x1f4 - i, i))).body);
      expect(again.error.message).toContain("is not available on any provider");
      expect(again.id).toBe(i);
    }
    expect(s.upstream.callsTo(FULL1) + s.upstream.callsTo(FULL2)).toBe(calls);
    expect(s.outcomes.filter((outcome) => !outcome.ok)).toEqual([]);
  });

  it("an archive that times out is no 'not available anywhere': the retryable error stands", async () => {
    const s = scene([...FULLS, { name: "archive", url: ARCHIVE, priority: 0 }]);
    s.upstream.script(ARCHIVE, () => ({
      ok: false,
      failure: { kind: "timeout", message: "timeout: no answer" },
      elapsedMs: 10,
    }));
    const body = JSON.parse((await s.rpc(s.balanceAt(7))).body);
    expect(body.error.code).toBe(-32603);
    expect(body.error.message).toContain("all providers failed");
  });

  it("a pruned-history error is never cached", async () => {
    const s = scene(FULLS);
    const first = await s.rpc(s.balanceAt(9));
    expect(first.headers["x-gateway-cache"]).not.toMatch(/^hit/);
    const second = await s.rpc(s.balanceAt(9));
    expect(second.headers["x-gateway-cache"]).not.toMatch(/^hit/);
  });
});

describe("what teaches a bound and what does not (docs/behaviour.md §16.3, §16.4)", () => {
  it("regression: a caller's words echoed back taught nothing and blamed nobody", async () => {
    const s = scene(MIXED);
    // The node echoes a bad param, in which the caller wrote a pruned node's words.
    s.upstream.script(FULL1, () =>
      answer(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          error: { code: -32602, message: 'invalid argument 0: "missing trie node"' },
        }),
      ),
    );
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getBalance",
      params: ["missing trie node", hex(100)],
    });
    const response = await s.rpc(body);
    expect(JSON.parse(response.body).error.code).toBe(-32602);
    expect(s.upstream.callsTo(FULL2) + s.upstream.callsTo(ARCHIVE)).toBe(0);
    expect((await s.store.readNetwork("net")).history.size).toBe(0);
  });

  it("a pruned claim about the head is the provider failing: retried elsewhere, no bound", async () => {
    const s = scene(MIXED);
    s.upstream.script(FULL1, () => answer(JSON.stringify({ jsonrpc: "2.0", id: 1, error: GETH })));
    const response = await s.rpc(s.balanceAt(HEAD));
    expect(response.headers["x-gateway-provider"]).toBe("full2");
    expect((await s.store.readNetwork("net")).history.size).toBe(0);
  });

  it("learned bounds expire: after learned_ttl_seconds the provider is asked again", async () => {
    const s = scene(MIXED, { history_bounds: { learned_ttl_seconds: 60 } });
    await s.rpc(s.balanceAt(100));
    s.advance(61_000);
    everyoneInQuorum(s.store, MIXED, {
      head: HEAD,
      timestamp: NOW / 1000,
      computedAt: NOW + 61_000,
    });
    await s.rpc(s.balanceAt(99));
    s.advance(2000);
    await s.rpc(s.balanceAt(98));
    expect(s.upstream.callsTo(FULL1)).toBe(2);
  });
});
