import { describe, expect, it } from "vitest";
import { MemorySubscriptionStore } from "../../support/memory-subscription-store.ts";
import {
  HEAD,
  harnessPerTest,
  KEYS,
  keyHash,
  PROVIDER,
  rpc,
  socketHarness,
} from "../../support/socket-harness.ts";

/**
 * The socket Lambda's `$default` for calls through the pipeline, on in-memory parts
 * (docs/behaviour.md "Subscriptions over WebSocket"): answers by id, bad input, the 128 KB
 * bound, and the API key a connection was opened with (removed, rotated, over its limit).
 */

const { start, connected } = harnessPerTest();

describe("$default: calls through the pipeline", () => {
  it("a call, a batch and viem's keep-alive (net_version, id null) are answered by id", async () => {
    const h = await connected();
    expect(await h.call("c1", rpc(1, "eth_chainId"))).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: "0x1",
    });
    expect(await h.call("c1", [rpc("a", "eth_chainId"), rpc("b", "eth_blockNumber")])).toEqual([
      { jsonrpc: "2.0", id: "a", result: "0x1" },
      { jsonrpc: "2.0", id: "b", result: `0x${HEAD.toString(16)}` },
    ]);
    const keepAlive = '{"jsonrpc":"2.0","id":null,"method":"net_version","params":[]}';
    const before = h.upstream.callsTo(PROVIDER);
    expect(JSON.parse((await h.send("c1", keepAlive)).body ?? "")).toEqual({
      jsonrpc: "2.0",
      id: null,
      result: "1",
    });
    const afterFirst = h.upstream.callsTo(PROVIDER);
    for (let index = 0; index < 5; index++) await h.send("c1", keepAlive);
    // net_version never changes: after the first, keep-alives are cache hits, no upstream call.
    expect(h.upstream.callsTo(PROVIDER)).toBe(afterFirst);
    expect(afterFirst - before).toBeLessThanOrEqual(1);
  });

  it("bad input is a JSON-RPC error, never a crash", async () => {
    const h = await connected();
    expect(await h.call("c1", "{not json")).toMatchObject({ id: null, error: { code: -32700 } });
    expect(await h.call("c1", "[]")).toMatchObject({ error: { code: -32600 } });
    expect(await h.call("c1", '"just a string"')).toMatchObject({ error: { code: -32600 } });
    expect(await h.call("c1", rpc(1, "eth_subscribe", []))).toMatchObject({
      id: 1,
      error: { code: -32602 },
    });
    // A notification gets no reply at all.
    expect(
      await h.call("c1", { jsonrpc: "2.0", method: "eth_chainId", params: [] }),
    ).toBeUndefined();
  });

  it("an answer over 128 KB is an error naming the limit, with the call's id", async () => {
    const h = await connected({
      result: (method) => (method === "eth_call" ? `0x${"ab".repeat(70_000)}` : undefined),
    });
    const answer = (await h.call(
      "c1",
      rpc(42, "eth_call", [{ to: `0x${"1".repeat(40)}`, data: "0x" }, "latest"]),
    )) as { id: number; error: { message: string } };
    expect(answer.id).toBe(42);
    expect(answer.error.message).toContain("128 KB");
  });

  it("with keys, a connection whose record is gone, or whose key was removed, is refused by id", async () => {
    const harness = await start({ config: KEYS });
    expect((await harness.connect("c1", { query: { key: "alice-key-123" } })).statusCode).toBe(200);
    // Another container: it does not remember the caller and reads the record.
    await harness.subscriptions.disconnect("net", "c1");
    const fresh = await socketHarness({ config: KEYS });
    expect(await fresh.call("c1", rpc(5, "eth_chainId"))).toMatchObject({
      id: 5,
      error: { code: -32001 },
    });
    fresh.close();
  });

  it("regression: a key rotated under its name (a new sha256) still served the connections its old key opened; now their messages are refused", async () => {
    const harness = await start({ config: KEYS });
    expect((await harness.connect("c1", { query: { key: "alice-key-123" } })).statusCode).toBe(200);
    const rotated = { api_keys: [{ name: "alice", sha256: keyHash("alice-key-NEW") }] };
    // Another container under the new config: it reads the connection's record.
    const after = await socketHarness({ config: rotated, subscriptions: harness.subscriptions });
    expect(await after.call("c1", rpc(1, "eth_chainId"))).toMatchObject({
      id: 1,
      error: { code: -32001, message: expect.stringContaining("no longer accepted") },
    });
    expect((await after.connect("c2", { query: { key: "alice-key-NEW" } })).statusCode).toBe(200);
    expect(await after.call("c2", rpc(2, "eth_chainId"))).toMatchObject({ id: 2, result: "0x1" });
    after.close();
  });

  it.each([
    [
      "rotated under its name (a new sha256)",
      [{ name: "alice", sha256: keyHash("alice-key-NEW") }],
    ],
    ["removed", [{ name: "bob", sha256: keyHash("bob-key-12345") }]],
  ])(
    "regression: a key %s left the connections it opened holding their subscriptions (still delivered to, still counted) and their slots; now the next message drops the connection with them",
    async (_name, apiKeys) => {
      const bounded = { ...KEYS, subscriptions: { max_connections_per_key: 1 } };
      const harness = await start({ config: bounded });
      expect((await harness.connect("c1", { query: { key: "alice-key-123" } })).statusCode).toBe(
        200,
      );
      expect(await harness.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))).toMatchObject({
        result: expect.any(String),
      });
      expect(await harness.subscriptions.list("net")).toEqual([
        expect.objectContaining({ caller: "alice", keySha256: keyHash("alice-key-123") }),
      ]);
      // Another container under the new config: it reads the connection's record.
      const after = await socketHarness({
        config: { api_keys: apiKeys, subscriptions: { max_connections_per_key: 1 } },
        subscriptions: harness.subscriptions,
      });
      expect(await after.call("c1", rpc(2, "eth_unsubscribe", ["0x1"]))).toMatchObject({
        id: 2,
        error: { code: -32001, message: expect.stringContaining("no longer accepted") },
      });
      expect(await harness.subscriptions.list("net")).toEqual([]);
      expect(await harness.subscriptions.connection("net", "c1")).toBeNull();
      expect(await after.call("c1", rpc(3, "eth_chainId"))).toMatchObject({
        id: 3,
        error: { code: -32001, message: expect.stringContaining("reconnect") },
      });
      after.close();
    },
  );

  it("a store that cannot drop such a connection still refuses its messages, never a crash", async () => {
    const store = new (class extends MemorySubscriptionStore {
      override async disconnect(): Promise<void> {
        throw new Error("the subscription store is unreachable");
      }
    })();
    const harness = await start({ config: KEYS, subscriptions: store });
    expect((await harness.connect("c1", { query: { key: "alice-key-123" } })).statusCode).toBe(200);
    const after = await socketHarness({
      config: { api_keys: [{ name: "alice", sha256: keyHash("alice-key-NEW") }] },
      subscriptions: store,
    });
    expect(await after.call("c1", rpc(1, "eth_chainId"))).toMatchObject({
      id: 1,
      error: { code: -32001, message: expect.stringContaining("no longer accepted") },
    });
    after.close();
  });

  it("a key over its requests_per_minute gets each call refused by its id", async () => {
    const harness = await start({ config: KEYS });
    expect((await harness.connect("c1", { query: { key: "slow-key-1234" } })).statusCode).toBe(200);
    expect(await harness.call("c1", rpc(1, "eth_chainId"))).toMatchObject({ id: 1, result: "0x1" });
    expect(await harness.call("c1", [rpc(2, "eth_chainId"), rpc(3, "eth_chainId")])).toMatchObject([
      { id: 2, error: { code: -32005 } },
      { id: 3, error: { code: -32005 } },
    ]);
  });
});
