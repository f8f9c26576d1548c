import { describe, expect, it, vi } from "vitest";
import { EventRecorder } from "../../../../functions/adapters/store/event-recorder.ts";
import type { EventStore } from "../../../../functions/adapters/store/event-store.ts";
import { makeScrubber } from "../../../../functions/core/config/redact.ts";
import type { GatewayEvent } from "../../../../functions/core/status/events.ts";
import { gatewayHarness, type HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer, refused, resultFor } from "../../../support/scripted-upstream.ts";

/**
 * Events the proxy records: only on the failure paths that write state anyway (a blacklist, a
 * capability blacklist, a force-rotation), each once, with its text scrubbed, and never in the
 * way of the answer. A healthy request records nothing and writes nothing.
 */

const NOW = 1_800_000_000_000;
const KEY = "f00dfeedcafe0123456789";
const P1 = `http://p1.test/v3/${KEY}`;
const P2 = "http://p2.test/";
const BACKUP = "http://backup.test/";

type Providers = HarnessProviders;

function harness(providers: Providers, events = new RecordingSink()) {
  const { gateway, store, upstream } = gatewayHarness({
    providers,
    now: NOW,
    deps: {
      scrub: makeScrubber([{ resolved: P1, redacted: "http://p1.test/v3/***" }], [KEY]),
      events,
    },
  });
  const rpc = (id: number, method = "eth_blockNumber", params: unknown[] = []) =>
    gateway.handleRpc("net", JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  return { gateway, store, upstream, events, rpc };
}

class RecordingSink {
  readonly events: GatewayEvent[] = [];
  record(event: GatewayEvent): void {
    this.events.push(event);
  }
}

const two: Providers = [
  { name: "p1", url: P1, priority: 2 },
  { name: "p2", url: P2, priority: 1 },
];
const error = (id: unknown, code: number, message: string) =>
  answer(JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } }));
const idOf = (body: string) => (JSON.parse(body) as { id: unknown }).id;

describe("events the proxy records", () => {
  it("none for healthy requests, which write no state either", async () => {
    const h = harness(two);
    h.upstream.script(
      P1,
      resultFor(() => "0x1"),
    );
    for (let id = 0; id < 20; id++) await h.rpc(id);
    expect(h.events.events).toEqual([]);
    expect(h.store.healthWrites).toEqual([]);
  });

  it("one blacklist per incident, with its reason, strike and expiry, the provider's URL redacted", async () => {
    const h = harness(two);
    h.upstream.script(P1, () => ({
      ok: false,
      failure: { kind: "connection", message: `connect ECONNREFUSED ${P1}` },
      elapsedMs: 1,
    }));
    h.upstream.script(
      P2,
      resultFor(() => "0x2"),
    );
    await Promise.all([h.rpc(1), h.rpc(2), h.rpc(3)]);
    await h.rpc(4);
    expect(h.events.events).toEqual([
      {
        network: "net",
        at: expect.any(Number),
        provider: "p1",
        kind: "blacklisted",
        reason: "connection",
        detail: expect.stringMatching(
          /^connection: connect ECONNREFUSED http:\/\/p1\.test\/v3\/\*\*\*; strike 1, until 20\d\d-/,
        ),
      },
    ]);
    expect(JSON.stringify(h.events.events)).not.toContain(KEY);
  });

  it("a rate limit's blacklist says so, and nothing is recorded for the provider that answered", async () => {
    const h = harness(two);
    h.upstream.script(P1, (request) => error(idOf(request.body), -32005, "rate limit exceeded"));
    h.upstream.script(
      P2,
      resultFor(() => "0x2"),
    );
    await h.rpc(1);
    expect(h.events.events.map((event) => [event.provider, event.kind, event.reason])).toEqual([
      ["p1", "blacklisted", "rate_limit"],
    ]);
  });

  it("a capability blacklist names the method", async () => {
    const h = harness(two);
    h.upstream.script(P1, (request) =>
      error(idOf(request.body), -32601, "the method trace_block does not exist/is not available"),
    );
    h.upstream.script(
      P2,
      resultFor(() => []),
    );
    await h.rpc(1, "trace_block", ["0x1"]);
    expect(h.events.events).toEqual([
      expect.objectContaining({
        provider: "p1",
        kind: "capability_blacklisted",
        reason: "capability",
        detail: expect.stringMatching(/^trace_block until .*: .*does not exist/),
      }),
    ]);
  });

  it.each([
    { backup: false, detail: /^3 unclassified errors in a row: demoted in this container until / },
    { backup: true, detail: /^3 unclassified errors in a row; strike 1, until / },
  ])("force-rotation with a backup $backup is one event", async ({ backup, detail }) => {
    const h = harness([...two, ...(backup ? [{ name: "b", url: BACKUP, backup: true }] : [])]);
    h.upstream.script(P1, (request) => error(idOf(request.body), -32000, "leveldb: closed 9f"));
    for (let id = 0; id < 3; id++) await h.rpc(id);
    expect(h.events.events).toEqual([
      expect.objectContaining({
        provider: "p1",
        kind: "force_rotated",
        reason: "force_rotate",
        detail: expect.stringMatching(detail),
      }),
    ]);
  });

  it("the answer never waits for an event's write: a store that never answers holds nothing up", async () => {
    const errors: unknown[] = [];
    const hanging: EventStore = {
      write: () => new Promise(() => undefined),
      newest: async () => [],
      tidy: async () => 0,
      claimConfigVersion: async () => false,
    };
    const recorder = new EventRecorder({
      store: hanging,
      clock: () => NOW,
      retentionSeconds: () => 86_400,
      onError: (_network, e) => errors.push(e),
    });
    const h = harness(two, recorder as unknown as RecordingSink);
    h.upstream.script(P1, () => refused());
    h.upstream.script(
      P2,
      resultFor(() => "0x2"),
    );
    // Timers stand still: a request that waited on the event's write (even only up to its
    // 200 ms bound for state writes) would never answer.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const response = await h.rpc(1);
      expect(response.status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
    expect((await recorder.newest("net", 10)).map((event) => event.kind)).toEqual(["blacklisted"]);
    expect(errors).toEqual([]);
  });
});
