import { keccak256 } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { HEALTHY } from "../../../functions/core/health/health.ts";
import type { LogLevel, Telemetry, UpstreamResult } from "../../../functions/core/ports.ts";
import {
  gatewayHarness,
  type HarnessNetwork,
  type HarnessProviders,
} from "../../support/gateway-harness.ts";
import { MemoryTransactionLedger } from "../../support/memory-ledger.ts";
import {
  answer,
  refused,
  resultFor,
  type ScriptedUpstream,
} from "../../support/scripted-upstream.ts";

/**
 * The request pipeline (core/request/gateway.ts and core/request/*) with no server, no DynamoDB and no
 * node: a scripted upstream, the in-memory state store and a test clock that moves by each
 * attempt's elapsed time. Everything here runs in milliseconds.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";
const P3 = "http://p3.test/";
const P4 = "http://p4.test/";
const BACKUP = "http://backup.test/";

type Providers = HarnessProviders;

const three: Providers = [
  { name: "p1", url: P1, priority: 3 },
  { name: "p2", url: P2, priority: 2 },
  { name: "p3", url: P3, priority: 1 },
];

interface Recorded {
  readonly logs: Array<{ level: LogLevel; message: string; fields: Record<string, unknown> }>;
  readonly counts: Array<{ name: string; dimensions: Record<string, string> }>;
}

function recordingTelemetry(): Telemetry & Recorded {
  const logs: Recorded["logs"] = [];
  const counts: Recorded["counts"] = [];
  return {
    logs,
    counts,
    log: (level, message, fields = {}) => logs.push({ level, message, fields }),
    count: (name, dimensions) => counts.push({ name, dimensions }),
    measure: () => undefined,
  };
}

function harness(
  providers: Providers,
  overrides: HarnessNetwork = {},
  scrubAnswer: (text: string) => string = (text) => text,
) {
  const telemetry = recordingTelemetry();
  const ledger = new MemoryTransactionLedger();
  /** What request stats (failing often) were told, attempt by attempt. */
  const outcomes: Array<{ provider: string; ok: boolean }> = [];
  const { gateway, store, upstream, advance, clock, network } = gatewayHarness({
    providers,
    network: overrides,
    config: { inner_errors: ["we can't execute this request"] },
    now: NOW,
    deps: {
      telemetry,
      scrubAnswer,
      ledger,
      recordOutcome: (_, provider, ok) => outcomes.push({ provider, ok }),
    },
  });
  const rpc = (body: string, remainingMs?: number) =>
    gateway.handleRpc("net", body, remainingMs === undefined ? {} : { remainingMs });
  return { gateway, store, upstream, telemetry, advance, rpc, clock, network, ledger, outcomes };
}

const call = (id: number, method = "eth_blockNumber", params: unknown[] = []) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });
const batch = (...calls: string[]) => `[${calls.join(",")}]`;
const error = (id: unknown, code: number, message: string) =>
  JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } });
const UNCLASSIFIED = (id: unknown) => error(id, -32000, "leveldb: closed abc");

describe("batches: split across providers, answered in the caller's order", () => {
  it("retries only the failed member on the next provider and puts it back in its place", async () => {
    const h = harness(three);
    h.upstream.script(P1, (request) => {
      const calls = JSON.parse(request.body) as Array<{ id: number }>;
      const parts = calls.map((c) =>
        c.id === 1
          ? error(c.id, -32005, "rate limit exceeded")
          : JSON.stringify({ jsonrpc: "2.0", id: c.id, result: `0x${c.id}a` }),
      );
      return answer(`[${parts.join(",")}]`);
    });
    h.upstream.script(
      P2,
      resultFor(() => "0xb"),
    );
    const response = await h.rpc(batch(call(10), call(11), call(12)));
    expect(response.status).toBe(200);
    expect(response.body).toBe(
      '[{"jsonrpc":"2.0","id":10,"result":"0x0a"},{"jsonrpc":"2.0","id":11,"result":"0xb"},{"jsonrpc":"2.0","id":12,"result":"0x2a"}]',
    );
    expect(h.upstream.callsTo(P1)).toBe(1);
    expect(h.upstream.bodiesTo(P2)).toEqual([
      '[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}]',
    ]);
    expect(response.headers["x-gateway-provider"]).toBe("p1,p2");
    expect(response.headers["x-gateway-attempts"]).toBe("2");
  });

  it("sends a batch the first provider failed as a whole to the next one, whole", async () => {
    const h = harness(three);
    h.upstream.script(P1, () => answer("<html>bad gateway</html>", 5, 502));
    h.upstream.script(
      P2,
      resultFor(() => "0x1"),
    );
    const response = await h.rpc(batch(call(1), call(2)));
    expect(JSON.parse(response.body)).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0x1" },
      { jsonrpc: "2.0", id: 2, result: "0x1" },
    ]);
    expect(h.upstream.callsTo(P2)).toBe(1);
    expect(h.store.healthWrites.map((w) => [w.provider, w.next.reason])).toEqual([
      ["p1", "connection"],
    ]);
  });

  it("answers invalid and denied members in place without sending them", async () => {
    const h = harness(three);
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    const response = await h.rpc(batch(call(1), "42", call(3, "admin_peers")));
    const answers = JSON.parse(response.body) as Array<{ id: unknown; error?: { code: number } }>;
    expect(answers.map((a) => [a.id, a.error?.code ?? null])).toEqual([
      [1, null],
      [null, -32600],
      [3, -32601],
    ]);
    expect(h.upstream.bodiesTo(P1)).toEqual([
      '[{"jsonrpc":"2.0","id":0,"method":"eth_blockNumber","params":[]}]',
    ]);
  });
});

describe("force-rotate: unclassified errors in a row rotate traffic away", () => {
  it.each([
    { backup: false, errors: 3, demoted: true, incident: null },
    { backup: false, errors: 2, demoted: false, incident: null },
    { backup: true, errors: 3, demoted: false, incident: "force_rotate" },
  ])(
    "backup configured: $backup, $errors errors → demoted $demoted, incident $incident",
    async ({ backup, errors, demoted, incident }) => {
      const providers: Providers = [
        { name: "p1", url: P1, priority: 2 },
        { name: "p2", url: P2, priority: 2 },
        ...(backup ? [{ name: "backup", url: BACKUP, backup: true }] : []),
      ];
      const h = harness(providers);
      h.upstream.script(P1, (request) => answer(UNCLASSIFIED(JSON.parse(request.body).id)));
      h.upstream.script(
        P2,
        resultFor(() => "0x2"),
      );
      // random 0.5 for both: equal keys, config order breaks the tie, so p1 goes first.
      for (let id = 0; id < errors; id++) {
        const response = await h.rpc(call(id));
        expect(response.body).toBe(UNCLASSIFIED(id));
      }
      expect(h.gateway.demoted(h.network).has("p1")).toBe(demoted);
      expect(h.store.healthWrites.map((w) => w.next.reason)).toEqual(incident ? [incident] : []);
      const next = await h.rpc(call(99));
      expect(next.headers["x-gateway-provider"]).toBe(demoted || incident ? "p2" : "p1");
    },
  );

  it("a success between unclassified errors starts the count again", async () => {
    const h = harness(three);
    let answers = [true, true, false, true, true];
    h.upstream.script(P1, (request) => {
      const id = JSON.parse(request.body).id;
      const unclassified = answers[0] ?? false;
      answers = answers.slice(1);
      return answer(
        unclassified ? UNCLASSIFIED(id) : JSON.stringify({ jsonrpc: "2.0", id, result: "0x1" }),
      );
    });
    for (let id = 0; id < 5; id++) await h.rpc(call(id));
    expect(h.gateway.demoted(h.network).size).toBe(0);
  });
});

describe("the slow rule", () => {
  it.each([
    { providers: three, elapsedMs: 3500, blacklisted: [], slow: true },
    { providers: three, elapsedMs: 2999, blacklisted: [], slow: false },
    { providers: three.slice(0, 2), elapsedMs: 3500, blacklisted: [], slow: false },
    { providers: three, elapsedMs: 3500, blacklisted: ["p3"], slow: false },
  ])(
    "$providers.length providers ($blacklisted.length blacklisted), $elapsedMs ms → slow $slow",
    async ({ providers, elapsedMs, blacklisted, slow }) => {
      const h = harness(providers);
      for (const name of blacklisted) {
        h.store.setHealth("net", name, {
          ...HEALTHY,
          strikes: 1,
          reason: "timeout",
          blacklistedUntil: NOW + 60_000,
          version: 1,
        });
      }
      h.upstream.script(P1, (request) =>
        answer(
          JSON.stringify({ jsonrpc: "2.0", id: JSON.parse(request.body).id, result: "0x1" }),
          elapsedMs,
        ),
      );
      const response = await h.rpc(call(1));
      expect(response.status).toBe(200);
      expect(
        h.store.healthWrites.filter((w) => w.provider === "p1").map((w) => w.next.reason),
      ).toEqual(slow ? ["slow"] : []);
    },
  );
});

describe("one strike per incident: the compare-and-set loop", () => {
  it.each([
    { conflicts: 0, written: 1, strikes: 1 },
    { conflicts: 1, written: 1, strikes: 1 },
    { conflicts: 2, written: 1, strikes: 1 },
    { conflicts: 3, written: 0, strikes: null },
  ])(
    "$conflicts lost races → $written write(s), strikes $strikes",
    async ({ conflicts, written, strikes }) => {
      const h = harness(three);
      h.store.conflictsToInject = conflicts;
      h.upstream.script(P1, () => refused());
      h.upstream.script(
        P2,
        resultFor(() => "0x1"),
      );
      const response = await h.rpc(call(1));
      expect(response.status).toBe(200);
      const writes = h.store.healthWrites.filter((w) => w.provider === "p1");
      expect(writes.length).toBe(written);
      expect(writes[0]?.next.strikes ?? null).toBe(strikes);
    },
  );

  it("a provider another container already blacklisted gets no second strike", async () => {
    const h = harness(three);
    h.upstream.script(P1, () => refused());
    h.upstream.script(
      P2,
      resultFor(() => "0x1"),
    );
    // Another container blacklisted p1 after this one read the state.
    await h.rpc(call(0));
    const before = h.store.healthWrites.length;
    h.store.setHealth("net", "p1", {
      ...HEALTHY,
      strikes: 1,
      reason: "connection",
      blacklistedUntil: h.clock() + 120_000,
      probeGated: true,
      version: 7,
    });
    h.advance(2_000);
    await h.rpc(call(1));
    expect(h.store.healthWrites.length).toBe(before);
  });
});

describe("emergency use, notifications, inner errors and the last upstream error", () => {
  it("tries blacklisted providers when none is a candidate, and adds no strike", async () => {
    const h = harness(three.slice(0, 2));
    for (const name of ["p1", "p2"]) {
      h.store.setHealth("net", name, {
        ...HEALTHY,
        strikes: 1,
        reason: "timeout",
        blacklistedUntil: NOW + (name === "p1" ? 90_000 : 30_000),
        version: 1,
      });
    }
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    const response = await h.rpc(call(1));
    // Earliest expiry first: p2, refused; then p1 answers.
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    expect(h.upstream.callsTo(P2)).toBe(1);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("a notification gets 204 and costs its provider nothing", async () => {
    const h = harness(three);
    h.upstream.script(P1, () => answer("", 1, 204));
    const response = await h.rpc('{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]}');
    expect(response).toMatchObject({ status: 204, body: "" });
    expect(h.store.healthWrites).toEqual([]);
  });

  it("regression: a batch of notifications only got 200 with an empty JSON body; now 204", async () => {
    const h = harness(three);
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    const response = await h.rpc(
      '[{"jsonrpc":"2.0","method":"eth_blockNumber"},{"jsonrpc":"2.0","method":"eth_chainId"}]',
    );
    expect(response).toMatchObject({ status: 204, body: "" });
  });

  it("an inner error tries the next provider, and is returned as is when attempts run out", async () => {
    const inner = (id: unknown) => error(id, -32000, "we can't execute this request");
    const h = harness(three);
    for (const url of [P1, P2, P3]) {
      h.upstream.script(url, (request) => answer(inner(JSON.parse(request.body).id)));
    }
    const response = await h.rpc(call(5));
    expect(response.body).toBe(inner(5));
    expect(response.headers["x-gateway-attempts"]).toBe("3");
  });

  it("when every provider fails with an upstream error, the last one goes back as is", async () => {
    const h = harness(three);
    h.upstream.script(P1, () => refused());
    h.upstream.script(P2, (request) =>
      answer(error(JSON.parse(request.body).id, -32005, "rate limited")),
    );
    h.upstream.script(P3, (request) =>
      answer(error(JSON.parse(request.body).id, -32603, "temporary internal error")),
    );
    const response = await h.rpc(call(8));
    expect(response.status).toBe(200);
    expect(response.body).toBe(error(8, -32603, "temporary internal error"));
  });

  it("when every provider fails without an answer, the gateway's own error names the last one", async () => {
    const h = harness(three);
    const response = await h.rpc(call(9));
    expect(response.status).toBe(502);
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: "2.0",
      id: 9,
      error: {
        code: -32603,
        message:
          "all providers failed for eth_blockNumber; last error: p3: connection: ECONNREFUSED",
      },
    });
  });
});

describe("deadlines", () => {
  const timeout = (request: { timeoutMs: number }): UpstreamResult => ({
    ok: false,
    failure: { kind: "timeout", message: "timeout" },
    elapsedMs: request.timeoutMs,
  });

  it("the Lambda's remaining time, less a margin, bounds the attempts and their timeouts", async () => {
    const h = harness(three);
    for (const url of [P1, P2, P3]) h.upstream.script(url, timeout);
    const response = await h.rpc(call(1), 12_000);
    expect(response.status).toBe(502);
    expect(h.upstream.calls.get(P1)?.map((r) => r.timeoutMs)).toEqual([10_000]);
    expect(h.upstream.calls.get(P2)?.map((r) => r.timeoutMs)).toEqual([1_000]);
    expect(h.upstream.callsTo(P3)).toBe(0);
  });

  it("request_deadline_ms bounds a request with time to spare", async () => {
    const h = harness(three, { request_deadline_ms: 15_000 });
    for (const url of [P1, P2, P3]) h.upstream.script(url, timeout);
    await h.rpc(call(1));
    expect([P1, P2, P3].map((url) => h.upstream.calls.get(url)?.map((r) => r.timeoutMs))).toEqual([
      [10_000],
      [5_000],
      undefined,
    ]);
  });
});

describe("capability: a method one provider does not serve", () => {
  it("goes to the next provider, and this container skips that provider for the method", async () => {
    const h = harness(three);
    h.upstream.script(P1, (request) =>
      answer(
        error(
          JSON.parse(request.body).id,
          -32601,
          "the method trace_block does not exist/is not available",
        ),
      ),
    );
    h.upstream.script(
      P2,
      resultFor(() => []),
    );
    const first = await h.rpc(call(1, "trace_block", ["0x1"]));
    expect(first.headers["x-gateway-provider"]).toBe("p2");
    await Promise.resolve();
    const second = await h.rpc(call(2, "trace_block", ["0x1"]));
    expect(second.headers["x-gateway-provider"]).toBe("p2");
    expect(h.upstream.callsTo(P1)).toBe(1);
    const state = await h.store.readNetwork("net");
    expect([...(state.capabilities.get("p1")?.keys() ?? [])]).toEqual(["trace_block"]);
  });
});

describe("penalties wait for the end of the request", () => {
  it("a call every provider failed the same way, while they serve other traffic, penalises nobody", async () => {
    const h = harness(three);
    // The monitor sees all three answer its checks: they serve other traffic.
    h.store.setQuorum("net", {
      head: 100,
      headTimestamp: 1000,
      members: ["p1", "p2", "p3"],
      excluded: {},
      heads: {},
      computedAt: NOW,
    });
    for (const url of [P1, P2, P3]) h.upstream.script(url, () => refused());
    const response = await h.rpc(call(1));
    expect(response.status).toBe(502);
    expect(h.store.healthWrites).toEqual([]);
    expect(h.telemetry.counts.filter((c) => c.name === "suspected_requests")).toHaveLength(1);
  });

  it("the same failures with no sign of other traffic penalise each provider once", async () => {
    const h = harness(three);
    for (const url of [P1, P2, P3]) h.upstream.script(url, () => refused());
    await h.rpc(call(1));
    expect(h.store.healthWrites.map((w) => w.provider).sort()).toEqual(["p1", "p2", "p3"]);
  });

  it("a provider that failed a call another provider answered is penalised", async () => {
    const h = harness(three);
    for (const url of [P1, P2, P3])
      h.upstream.script(
        url,
        resultFor(() => "0x1"),
      );
    await h.rpc(call(0));
    h.upstream.script(P1, () => refused());
    await h.rpc(call(1));
    expect(h.store.healthWrites.map((w) => [w.provider, w.next.reason])).toEqual([
      ["p1", "connection"],
    ]);
  });

  it("every provider answering method-not-found is the caller's: the answer as is, no blacklist", async () => {
    const h = harness(three);
    const notFound = (id: unknown) =>
      error(id, -32601, "the method eth_fooBar does not exist/is not available");
    for (const url of [P1, P2, P3]) {
      h.upstream.script(url, (request) => answer(notFound(JSON.parse(request.body).id)));
    }
    const response = await h.rpc(call(4, "eth_fooBar"));
    expect(response.body).toBe(notFound(4));
    const state = await h.store.readNetwork("net");
    expect(state.capabilities.size).toBe(0);
  });

  it("a timeout the deadline cut short earns no strike", async () => {
    const h = harness(three);
    h.upstream.script(P1, (request) => ({
      ok: false,
      failure: { kind: "timeout", message: "timeout" },
      elapsedMs: request.timeoutMs,
    }));
    // 4 s left after the margin: the attempt's 10 s timeout is cut to 4 s.
    const response = await h.rpc(call(1), 5_000);
    expect(response.status).toBe(502);
    expect(h.store.healthWrites).toEqual([]);
  });
});

describe("Retry-After", () => {
  it.each([
    ["2", 2_000],
    [undefined, 300_000],
  ])("a 429 with Retry-After %s blacklists for %i ms", async (header, cooldown) => {
    const h = harness(three);
    h.upstream.script(P1, () => ({
      ok: true,
      status: 429,
      body: "Too Many Requests",
      elapsedMs: 1,
      ...(header === undefined ? {} : { retryAfter: header }),
    }));
    h.upstream.script(
      P2,
      resultFor(() => "0x1"),
    );
    const before = h.clock();
    await h.rpc(call(1));
    const [write] = h.store.healthWrites;
    expect(write?.next.reason).toBe("rate_limit");
    expect((write?.next.blacklistedUntil ?? 0) - before).toBeGreaterThanOrEqual(cooldown);
    expect((write?.next.blacklistedUntil ?? 0) - before).toBeLessThan(cooldown + 100);
  });
});

describe("made-up method names never become state", () => {
  const notFound = (id: unknown, method: string) =>
    error(id, -32601, `the method ${method} does not exist/is not available`);
  const echoNotFound = (request: { body: string }) => {
    const parsed = JSON.parse(request.body) as
      | { id: unknown; method: string }
      | Array<{ id: unknown; method: string }>;
    return answer(
      Array.isArray(parsed)
        ? `[${parsed.map((c) => notFound(c.id, c.method)).join(",")}]`
        : notFound(parsed.id, parsed.method),
    );
  };

  it("regression: a batch of 100 made-up names cost 200 upstream calls and 200 items; now one call and none", async () => {
    const h = harness(three, { max_batch: 100 });
    for (const url of [P1, P2, P3]) h.upstream.script(url, echoNotFound);
    const names = Array.from({ length: 100 }, (_, i) => `zz_${i.toString(36)}x`);
    const response = await h.rpc(batch(...names.map((name, i) => call(i, name))));
    const answers = JSON.parse(response.body) as Array<{ id: number; error: { code: number } }>;
    expect(answers.map((a) => [a.id, a.error.code])).toEqual(names.map((_, i) => [i, -32601]));
    expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([1, 0, 0]);
    expect(h.store.healthWrites).toEqual([]);
    expect((await h.store.readNetwork("net")).capabilities.size).toBe(0);
  });

  it.each([
    ["a catalogue method", "trace_block", {}],
    ["a method the config allows", "custom_method", { methods_allow: ["eth_*", "custom_*"] }],
  ])(
    "%s a lone provider does not serve is blacklisted for that method",
    async (_name, method, extra) => {
      const h = harness([{ name: "p1", url: P1 }], extra);
      h.upstream.script(P1, echoNotFound);
      await h.rpc(call(1, method));
      await new Promise((resolve) => setImmediate(resolve));
      const state = await h.store.readNetwork("net");
      expect([...(state.capabilities.get("p1")?.keys() ?? [])]).toEqual([method]);
    },
  );

  it("capability blacklists stop at max_capability_blacklists per provider", async () => {
    const h = harness([{ name: "p1", url: P1 }], {
      max_capability_blacklists: 2,
      methods_allow: ["x_*"],
    });
    h.upstream.script(P1, echoNotFound);
    await h.rpc(batch(call(1, "x_a"), call(2, "x_b"), call(3, "x_c")));
    await new Promise((resolve) => setImmediate(resolve));
    const state = await h.store.readNetwork("net");
    expect(state.capabilities.get("p1")?.size).toBe(2);
  });
});

describe("the slow rule spares calls that are slow everywhere", () => {
  it.each([
    [
      "regression: a slow eth_getLogs blacklisted the primary as slow",
      call(1, "eth_getLogs", [{}]),
    ],
    ["a trace", call(1, "debug_traceTransaction", [`0x${"ab".repeat(32)}`])],
    ["a batch", batch(call(1), call(2))],
  ])("%s", async (_name, body) => {
    const h = harness(three);
    const results = resultFor((method) => (method === "eth_blockNumber" ? "0x1" : []));
    h.upstream.script(P1, (request) => ({ ...results(request, 1), elapsedMs: 8_000 }));
    const response = await h.rpc(body);
    expect(response.status).toBe(200);
    expect(h.store.healthWrites).toEqual([]);
  });
});

describe("provider batch limits: cut batches to fit, never blacklist", () => {
  /** Answers batches of up to `limit` calls; refuses bigger ones as a provider does. */
  const takesBatchesUpTo =
    (limit: number): Parameters<ScriptedUpstream["script"]>[1] =>
    (request, n) => {
      const parsed = JSON.parse(request.body) as unknown;
      if (Array.isArray(parsed) && parsed.length > limit) {
        return answer(error(null, -32600, `batch size too large: max ${limit}`));
      }
      return resultFor(() => "0x1")(request, n);
    };

  it("regression: a provider refusing batches over 3 was blacklisted; now it gets halves and keeps its traffic", async () => {
    const h = harness(three);
    h.upstream.script(P1, takesBatchesUpTo(3));
    const calls = Array.from({ length: 10 }, (_, i) => call(i));
    const response = await h.rpc(batch(...calls));
    expect((JSON.parse(response.body) as unknown[]).length).toBe(10);
    expect(response.headers["x-gateway-provider"]).toBe("p1");
    expect(h.upstream.callsTo(P2)).toBe(0);
    expect(h.store.healthWrites).toEqual([]);
    const bodies = h.upstream.bodiesTo(P1).map((body) => (JSON.parse(body) as unknown[]).length);
    // 10 refused, 2 × 5 refused, then batches of 2 (the learned size).
    expect(bodies).toEqual([10, 5, 5, 2, 2, 2, 2, 2]);
    await new Promise((resolve) => setImmediate(resolve));
    expect((await h.store.readNetwork("net")).batchLimits.get("p1")?.value).toBe(2);
  });

  it("the learned size is used from the next request on, with no refusal", async () => {
    const h = harness(three);
    h.upstream.script(P1, takesBatchesUpTo(3));
    await h.rpc(batch(call(1), call(2), call(3), call(4)));
    const before = h.upstream.callsTo(P1);
    await h.rpc(batch(call(1), call(2), call(3), call(4)));
    expect(
      h.upstream
        .bodiesTo(P1)
        .slice(before)
        .map((b) => (JSON.parse(b) as unknown[]).length),
    ).toEqual([2, 2]);
  });

  it("a configured max_batch cuts batches before any refusal", async () => {
    const h = harness([{ name: "p1", url: P1, max_batch: 2 }, three[1] as Providers[number]]);
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    await h.rpc(batch(call(1), call(2), call(3)));
    expect(h.upstream.bodiesTo(P1).map((b) => (JSON.parse(b) as unknown[]).length)).toEqual([2, 1]);
  });

  it("a provider that takes no batch at all gets each call on its own", async () => {
    const h = harness(three);
    h.upstream.script(P1, takesBatchesUpTo(0));
    const response = await h.rpc(batch(call(7), call(8)));
    expect(JSON.parse(response.body)).toEqual([
      { jsonrpc: "2.0", id: 7, result: "0x1" },
      { jsonrpc: "2.0", id: 8, result: "0x1" },
    ]);
    expect(h.upstream.bodiesTo(P1).slice(-2)).toEqual([
      '{"jsonrpc":"2.0","id":0,"method":"eth_blockNumber","params":[]}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
    ]);
    expect(h.store.healthWrites).toEqual([]);
  });
});

describe("eth_sendRawTransaction never reports a sent transaction as failed", () => {
  // anvil's first default account: a well-known test key, never a real one.
  const account = privateKeyToAccount(
    "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  );
  const signed = (chainId: number) =>
    account.signTransaction({
      chainId,
      nonce: 0,
      to: "0x70997970c51812dc3a010c7d01b50e677d4c79c8",
      value: 1n,
      gas: 21000n,
      gasPrice: 1n,
    });
  const send = (id: number, raw: string) => call(id, "eth_sendRawTransaction", [raw]);
  const lost = (request: { timeoutMs: number }): UpstreamResult => ({
    ok: false,
    failure: { kind: "timeout", message: "timeout" },
    elapsedMs: request.timeoutMs,
  });
  const nonceTooLow = (found: boolean) => (request: { body: string }) => {
    const parsed = JSON.parse(request.body) as { id: unknown; method: string };
    if (parsed.method === "eth_getTransactionByHash") {
      return answer(
        JSON.stringify({ jsonrpc: "2.0", id: parsed.id, result: found ? { nonce: "0x0" } : null }),
      );
    }
    return answer(error(parsed.id, -32000, "nonce too low"));
  };

  it("regression: a lost answer then 'transaction already imported' reached the caller as -32003; now the hash", async () => {
    const h = harness(three);
    const raw = await signed(1);
    h.upstream.script(P1, lost);
    h.upstream.script(P2, (request) =>
      answer(error(JSON.parse(request.body).id, -32003, "transaction already imported")),
    );
    const response = await h.rpc(send(5, raw));
    expect(response.body).toBe(`{"jsonrpc":"2.0","id":5,"result":"${keccak256(raw)}"}`);
  });

  it.each([
    [true, "the hash"],
    [false, "the caller's error as is"],
  ])("'nonce too low', the transaction known by hash: %s → %s", async (found) => {
    const h = harness(three);
    const raw = await signed(1);
    h.upstream.script(P1, nonceTooLow(found));
    h.upstream.script(P2, nonceTooLow(found));
    const response = await h.rpc(send(6, raw));
    expect(response.body).toBe(
      found
        ? `{"jsonrpc":"2.0","id":6,"result":"${keccak256(raw)}"}`
        : error(6, -32000, "nonce too low"),
    );
  });

  it("every provider losing its answer, one holding the transaction: the hash", async () => {
    const h = harness(three);
    const raw = await signed(1);
    for (const url of [P1, P2, P3]) {
      h.upstream.script(url, (request) =>
        JSON.parse(request.body).method === "eth_getTransactionByHash"
          ? answer(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { nonce: "0x0" } }))
          : refused(),
      );
    }
    const response = await h.rpc(send(7, raw), 20_000);
    expect(response).toMatchObject({
      status: 200,
      body: `{"jsonrpc":"2.0","id":7,"result":"${keccak256(raw)}"}`,
    });
  });

  const hashOf = (request: { body: string }) => {
    const parsed = JSON.parse(request.body) as { id: unknown; params: [`0x${string}`] };
    return answer(
      JSON.stringify({ jsonrpc: "2.0", id: parsed.id, result: keccak256(parsed.params[0]) }),
    );
  };

  it("the top provider's acceptance is the answer; copies go to the next broadcast_to providers", async () => {
    const h = harness([...three, { name: "p4", url: P4 }]);
    const raw = await signed(1);
    for (const url of [P1, P2, P3, P4]) h.upstream.script(url, hashOf);
    const response = await h.rpc(send(9, raw));
    expect(response.body).toBe(`{"jsonrpc":"2.0","id":9,"result":"${keccak256(raw)}"}`);
    expect([P1, P2, P3, P4].map((url) => h.upstream.callsTo(url))).toEqual([1, 1, 1, 0]);
    expect(h.ledger.entries.get(`net/${keccak256(raw)}`)).toEqual({ status: "accepted" });
  });

  it("copies come out of max_upstream_calls, one call per send left for its attempts", async () => {
    const single = [...three, { name: "p4", url: P4 }].map((p) => ({ ...p, max_batch: 1 }));
    const h = harness(single, { max_upstream_calls: 4 });
    const raws = await Promise.all(
      [0, 1, 2].map((nonce) =>
        account.signTransaction({
          chainId: 1,
          nonce,
          to: "0x70997970c51812dc3a010c7d01b50e677d4c79c8",
          value: 1n,
          gas: 21000n,
          gasPrice: 1n,
        }),
      ),
    );
    for (const url of [P1, P2, P3, P4]) h.upstream.script(url, hashOf);
    const response = await h.rpc(batch(...raws.map((raw, index) => send(index, raw))));
    expect((JSON.parse(response.body) as Array<{ result?: string }>).map((a) => a.result)).toEqual(
      raws.map((raw) => keccak256(raw)),
    );
    const calls = [P1, P2, P3, P4].reduce((sum, url) => sum + h.upstream.callsTo(url), 0);
    expect(calls).toBe(4);
  });

  it("broadcast_to 0: only the attempts send it", async () => {
    const h = harness(three, { broadcast_to: 0 });
    const raw = await signed(1);
    for (const url of [P1, P2, P3]) h.upstream.script(url, hashOf);
    await h.rpc(send(9, raw));
    expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([1, 0, 0]);
  });

  it("every attempt refused by the node but a copy accepted: the hash", async () => {
    const h = harness(three);
    const raw = await signed(1);
    const poor = (request: { body: string }) =>
      answer(
        error(JSON.parse(request.body).id, -32000, "insufficient funds for gas * price + value"),
      );
    h.upstream.script(P1, poor).script(P2, hashOf).script(P3, poor);
    const response = await h.rpc(send(10, raw));
    expect(response.body).toBe(`{"jsonrpc":"2.0","id":10,"result":"${keccak256(raw)}"}`);
  });

  it("sent again after an acceptance: the hash whatever the providers now say, and spread again", async () => {
    const h = harness(three);
    const raw = await signed(1);
    for (const url of [P1, P2, P3]) h.upstream.script(url, hashOf);
    await h.rpc(send(11, raw));
    for (const url of [P1, P2, P3]) {
      h.upstream.script(url, (request) =>
        answer(error(JSON.parse(request.body).id, -32000, "nonce too low")),
      );
    }
    const before = [P1, P2, P3].map((url) => h.upstream.callsTo(url));
    const response = await h.rpc(send(12, raw));
    expect(response.body).toBe(`{"jsonrpc":"2.0","id":12,"result":"${keccak256(raw)}"}`);
    expect(
      [P1, P2, P3].map((url, index) => h.upstream.callsTo(url) - (before[index] ?? 0)),
    ).toEqual([1, 1, 1]);
  });

  it("sent again after a refusal: sent again, the new outcome recorded", async () => {
    const h = harness(three, { broadcast_to: 0 });
    const raw = await signed(1);
    h.upstream.script(P1, (request) =>
      answer(
        error(JSON.parse(request.body).id, -32000, "insufficient funds for gas * price + value"),
      ),
    );
    const refusedAnswer = await h.rpc(send(13, raw));
    expect(JSON.parse(refusedAnswer.body)).toMatchObject({ error: { message: /insufficient/ } });
    expect(h.ledger.entries.get(`net/${keccak256(raw)}`)).toMatchObject({ status: "refused" });
    h.upstream.script(P1, hashOf);
    const accepted = await h.rpc(send(14, raw));
    expect(accepted.body).toBe(`{"jsonrpc":"2.0","id":14,"result":"${keccak256(raw)}"}`);
    expect(h.ledger.entries.get(`net/${keccak256(raw)}`)).toEqual({ status: "accepted" });
  });

  it("a refusal is kept in the ledger masked as the caller's copy is: a provider may echo its own URL", async () => {
    const mask = (text: string) => text.replaceAll("s3cr3t", "***");
    const h = harness(three, { broadcast_to: 0 }, mask);
    const raw = await signed(1);
    h.upstream.script(P1, (request) =>
      answer(error(JSON.parse(request.body).id, -32000, "insufficient funds (https://rpc/s3cr3t)")),
    );
    const response = await h.rpc(send(15, raw));
    expect(response.body).not.toContain("s3cr3t");
    const kept = JSON.stringify(h.ledger.entries.get(`net/${keccak256(raw)}`));
    expect(kept).toContain("insufficient funds (https://rpc/***)");
    expect(kept).not.toContain("s3cr3t");
  });

  it("a transaction signed for another chain is the caller's error, sent nowhere", async () => {
    const h = harness(three);
    const response = await h.rpc(send(8, await signed(31337)));
    expect(JSON.parse(response.body)).toMatchObject({ id: 8, error: { code: -32602 } });
    expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([0, 0, 0]);
  });
});

describe("max_upstream_calls", () => {
  it("calls past the budget get -32005 naming it, in place, and are never sent", async () => {
    const h = harness([{ name: "p1", url: P1, max_batch: 1 }], { max_upstream_calls: 4 });
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    const response = await h.rpc(batch(...Array.from({ length: 6 }, (_, i) => call(i))));
    const answers = JSON.parse(response.body) as Array<{
      id: number;
      error?: { code: number; message: string };
    }>;
    expect(answers.map((a) => a.error?.code ?? "ok")).toEqual([
      "ok",
      "ok",
      "ok",
      "ok",
      -32005,
      -32005,
    ]);
    // In place: each refused call keeps its own id, and its error names the limit and its value.
    expect(answers.slice(4).map((a) => a.id)).toEqual([4, 5]);
    for (const refused of answers.slice(4)) {
      expect(refused.error?.message).toContain("max_upstream_calls (4 upstream calls)");
    }
    expect(h.upstream.callsTo(P1)).toBe(4);
  });
});

describe("the served head (eth_blockNumber never goes back)", () => {
  // head_cache_ms 250: a publication counts once 250 + 250 ms old; block time 12 s.
  const DELAY = 500;
  const head = (
    served: { block: number; at: number } | null,
    previousServed: { block: number; at: number } | null = null,
  ) => ({
    latest: { number: 100, hash: null },
    safe: null,
    finalized: null,
    served,
    previousServed,
    updatedAt: NOW - 60_000,
    reorgSeenAt: 0,
  });
  const blockNumber = (n: number) => resultFor(() => `0x${n.toString(16)}`);
  const answered = async (h: ReturnType<typeof harness>) =>
    JSON.parse((await h.rpc(call(1))).body).result as string;

  it.each([
    ["a publication old enough", head({ block: 102, at: NOW - DELAY }), "0x66"],
    [
      "a publication too young: the one before it",
      head({ block: 102, at: NOW - 100 }, { block: 101, at: NOW - 20_000 }),
      "0x65",
    ],
  ])(
    "published within a block time, %s: answered with no provider call",
    async (_name, h0, expected) => {
      const h = harness(three);
      h.store.setHead("net", h0);
      expect(await answered(h)).toBe(expected);
      expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([0, 0, 0]);
    },
  );

  it("nothing published within a block time: a provider is asked, its higher number published, the served head answered", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    h.upstream.script(P1, blockNumber(105));
    expect(await answered(h)).toBe("0x64");
    await new Promise((resolve) => setImmediate(resolve));
    expect((await h.store.readNetwork("net")).head?.served?.block).toBe(105);
  });

  it("a provider far under the served head is behind: the next provider answers, nobody is struck", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    h.upstream.script(P1, blockNumber(50));
    h.upstream.script(P2, blockNumber(101));
    const response = await h.rpc(call(1));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(JSON.parse(response.body).result).toBe("0x64");
    expect(h.store.healthWrites).toEqual([]);
  });

  it("regression: every provider failed, one of them from behind the served head: the call failed with 502; now the served head is answered", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    h.upstream.script(P1, () => refused());
    h.upstream.script(P2, blockNumber(50));
    h.upstream.script(P3, () => refused());
    const response = await h.rpc(call(1));
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body).result).toBe("0x64");
    expect(h.upstream.callsTo(P2)).toBe(1);
  });

  it("every provider failed with no answer at all: no served head stands in for them", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    for (const url of [P1, P2, P3]) h.upstream.script(url, () => refused());
    const response = await h.rpc(call(1));
    expect(response.status).toBe(502);
  });

  it("regression: with no chain position yet, every eth_blockNumber a provider answered tried a publication (543 DynamoDB writes in 5 s locally); now none until there is one, then one per delay per container", async () => {
    const h = harness(three);
    h.upstream.script(P1, blockNumber(105));
    let tries = 0;
    const publish = h.store.publishServed.bind(h.store);
    h.store.publishServed = (...args) => {
      tries++;
      return publish(...args);
    };
    for (let id = 0; id < 20; id++) await h.rpc(call(id));
    expect(tries).toBe(0);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    h.advance(1_000);
    for (let id = 20; id < 40; id++) await h.rpc(call(id));
    expect(tries).toBe(1);
    // Past a block time with nothing newer published, a provider is asked again.
    h.advance(12_000);
    h.upstream.script(P1, blockNumber(106));
    await h.rpc(call(40));
    expect(tries).toBe(2);
  });

  it("regression: with 0.25 s blocks every eth_blockNumber went to a provider, though no container publishes more than once a delay; now a publication within the delay answers", async () => {
    const h = harness(three, { block_time_seconds: 0.25 });
    h.store.setHead(
      "net",
      head({ block: 102, at: NOW - DELAY + 500 }, { block: 101, at: NOW - 5_000 }),
    );
    h.upstream.script(P1, blockNumber(103));
    expect(await answered(h)).toBe("0x65");
    expect(h.upstream.callsTo(P1)).toBe(0);
  });

  it("before any publication, the provider's own number", async () => {
    const h = harness(three);
    h.upstream.script(P1, blockNumber(7));
    expect(await answered(h)).toBe("0x7");
  });

  // The chain position says block 100, 60 s ago: with 12 s blocks and the margin of 8, no chain
  // can be past 113 yet.
  it("regression: before any publication is old enough, a provider's number beyond the reachable head went to the caller; now the caller gets the newest block known to exist", async () => {
    const h = harness(three);
    h.store.setHead("net", head(null));
    h.upstream.script(P1, blockNumber(1_000));
    expect(await answered(h)).toBe("0x64");
  });

  // A new devnet: the chain position says block 0, 60 s ago, and no publication was made.
  it("regression: with the chain position at block 0, a provider's number beyond the reachable head went to the caller; now block 0 does", async () => {
    const h = harness(three);
    h.store.setHead("net", { ...head(null), latest: { number: 0, hash: null } });
    h.upstream.script(P1, blockNumber(1_000));
    expect(await answered(h)).toBe("0x0");
  });

  it("before any publication is old enough, a provider's number up to the reachable head is the caller's", async () => {
    const h = harness(three);
    h.store.setHead("net", head(null));
    h.upstream.script(P1, blockNumber(113));
    expect(await answered(h)).toBe("0x71");
  });

  // The first publication (100) becomes the served head once it is a delay old, and nothing
  // lower is served after it: a caller handed the provider's 105 meanwhile would see 100 next.
  it("regression: while the only publication was too young, a provider's higher number went to the caller, and the served head after it was lower; now the caller gets the publication", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 1_000 }));
    h.upstream.script(P1, blockNumber(105));
    expect(await answered(h)).toBe("0x64");
    h.advance(DELAY);
    h.upstream.script(P1, blockNumber(106));
    expect(await answered(h)).toBe("0x64");
  });

  // The chain position moved on to 104 after the publication of 100, which was then too young to
  // publish again: 104 is not what the containers will serve next, 100 is.
  it("regression: while the only publication was too young, a provider's number beyond the reachable head got the chain position's latest, above the publication served next; now the publication", async () => {
    const h = harness(three);
    h.store.setHead("net", {
      ...head({ block: 100, at: NOW - 1_000 }),
      latest: { number: 104, hash: null },
    });
    h.upstream.script(P1, blockNumber(1_000));
    expect(await answered(h)).toBe("0x64");
  });

  it("a null for a block the served head covers is behind: next provider, no strike; with another provider's answer to the call, a failed request for 'failing often'", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    h.upstream.script(
      P1,
      resultFor(() => null),
    );
    h.upstream.script(
      P2,
      resultFor(() => ({ number: "0x5a" })),
    );
    const response = await h.rpc(call(1, "eth_getBlockByNumber", ["0x5a", false]));
    expect(response.headers["x-gateway-provider"]).toBe("p2");
    expect(h.store.healthWrites).toEqual([]);
    expect(h.outcomes).toEqual([
      { provider: "p2", ok: true },
      { provider: "p1", ok: false },
    ]);
  });

  it("regression: an answer from behind counted as a failed request in the stats behind 'failing often', so a served head above the chain (a revert) had every provider excluded from quorum; now, while no provider has the block, it counts as neither", async () => {
    const h = harness(three);
    h.store.setHead("net", head({ block: 100, at: NOW - 60_000 }));
    for (const url of [P1, P2, P3])
      h.upstream.script(
        url,
        resultFor(() => null),
      );
    await h.rpc(call(1, "eth_getBlockByNumber", ["0x64", false]));
    expect(h.outcomes).toEqual([]);
  });

  describe("a lone eth_blockNumber the served head answers: the short path past the providers", () => {
    const recent = () => head({ block: 102, at: NOW - DELAY });

    it("answers as the full pipeline does: the same text, status and diagnostic headers as a batch of that call", async () => {
      const h = harness(three);
      h.store.setHead("net", recent());
      const lone = await h.rpc(call(7));
      const inBatch = await h.rpc(batch(call(7)));
      expect(lone.status).toBe(inBatch.status);
      expect(lone.headers).toEqual(inBatch.headers);
      expect(`[${lone.body}]`).toBe(inBatch.body);
      expect(lone.headers).toMatchObject({
        "x-gateway-provider": "",
        "x-gateway-attempts": "0",
        "x-gateway-cache": "bypass",
      });
      expect(lone.cacheClass).toBe("realtime");
      expect([P1, P2, P3].map((url) => h.upstream.callsTo(url))).toEqual([0, 0, 0]);
    });

    it("keeps the caller's id as written, and answers a notification with 204 and no body", async () => {
      const h = harness(three);
      h.store.setHead("net", recent());
      const withStringId = await h.rpc(
        '{"jsonrpc":"2.0","id":"a\\u0062","method":"eth_blockNumber"}',
      );
      expect(withStringId.body).toBe('{"jsonrpc":"2.0","id":"a\\u0062","result":"0x66"}');
      const notification = await h.rpc('{"jsonrpc":"2.0","method":"eth_blockNumber","params":[]}');
      expect(notification).toMatchObject({ status: 204, body: "", cacheClass: "realtime" });
    });

    it("counts the request in the metrics and logs it with no routing (no provider was in question)", async () => {
      const h = harness(three);
      h.store.setHead("net", recent());
      await h.rpc(call(1));
      expect(h.telemetry.counts.filter((c) => c.name === "requests")).toEqual([
        { name: "requests", dimensions: { network: "net" } },
      ]);
      const served = h.telemetry.logs.find((line) => line.message === "request served");
      expect(served?.fields).toMatchObject({ method: "eth_blockNumber", attempts: 0, routing: [] });
    });

    it("a network that denies eth_blockNumber still refuses it", async () => {
      const h = harness(three, { methods_deny: ["eth_blockNumber"] });
      h.store.setHead("net", recent());
      const response = await h.rpc(call(3));
      expect(JSON.parse(response.body)).toMatchObject({ id: 3, error: { code: -32601 } });
    });

    it("with every provider configured not to serve it, the answer is still 'not served'", async () => {
      const h = harness(
        three.map((provider) => ({ ...provider, methods_deny: ["eth_blockNumber"] })),
      );
      h.store.setHead("net", recent());
      const response = await h.rpc(call(4));
      expect(JSON.parse(response.body)).toMatchObject({
        id: 4,
        error: { code: -32601, message: expect.stringContaining("not served by any provider") },
      });
    });

    it("with one provider configured to serve it, the served head answers", async () => {
      const h = harness([
        { name: "p1", url: P1, methods_deny: ["eth_blockNumber"] },
        { name: "p2", url: P2 },
      ]);
      h.store.setHead("net", recent());
      expect(await answered(h)).toBe("0x66");
      expect([P1, P2].map((url) => h.upstream.callsTo(url))).toEqual([0, 0]);
    });
  });
});
