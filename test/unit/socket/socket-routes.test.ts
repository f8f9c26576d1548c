import { afterEach, describe, expect, it } from "vitest";
import {
  HEAD,
  keyHash,
  PROVIDER,
  type SocketHarness,
  socketHarness,
} from "../../support/socket-harness.ts";

/**
 * The socket Lambda's three routes on in-memory parts (docs/behaviour.md "Subscriptions over
 * WebSocket"): who `$connect` lets in, what `$default` answers (the pipeline's calls, the
 * registry's, refusals by id), and what `$disconnect` removes.
 */

let harness: SocketHarness | undefined;
afterEach(() => {
  harness?.close();
  harness = undefined;
});

const KEYS = {
  api_keys: [
    { name: "alice", sha256: keyHash("alice-key-123") },
    { name: "slow", sha256: keyHash("slow-key-1234"), requests_per_minute: 2 },
  ],
};
const rpc = (id: unknown, method: string, params: unknown[] = []) => ({
  jsonrpc: "2.0",
  id,
  method,
  params,
});

async function connected(options: Parameters<typeof socketHarness>[0] = {}, id = "c1") {
  harness = await socketHarness(options);
  expect((await harness.connect(id)).statusCode).toBe(200);
  return harness;
}

describe("$connect", () => {
  it.each([
    ["no keys configured: anyone", {}, {}, 200],
    ["the key in ?key=", KEYS, { query: { key: "alice-key-123" } }, 200],
    [
      "the key in x-api-key, whatever the case of its name",
      KEYS,
      { headers: { "X-Api-Key": "alice-key-123" } },
      200,
    ],
    [
      "an empty header does not hide the query's key",
      KEYS,
      { headers: { "x-api-key": "" }, query: { key: "alice-key-123" } },
      200,
    ],
    ["no key", KEYS, {}, 401],
    ["a wrong key", KEYS, { query: { key: "mallory" } }, 401],
    [
      "an origin the CORS policy allows",
      { cors_origins: ["https://app.example"] },
      { headers: { Origin: "https://app.example" } },
      200,
    ],
    [
      "an origin it does not",
      { cors_origins: ["https://app.example"] },
      { headers: { Origin: "https://evil.example" } },
      403,
    ],
    ["no origin (not a browser)", { cors_origins: ["https://app.example"] }, {}, 200],
  ])("%s: %i", async (_name, config, request, status) => {
    harness = await socketHarness({ config });
    const result = await harness.connect("c1", request);
    expect(result.statusCode).toBe(status);
    if (status !== 200)
      expect(JSON.parse(result.body ?? "")).toMatchObject({ id: null, error: {} });
  });

  it("a key holds at most max_connections_per_key connections; closing one lets the next in", async () => {
    harness = await socketHarness({
      config: { ...KEYS, subscriptions: { max_connections_per_key: 2 } },
    });
    const key = { query: { key: "alice-key-123" } };
    expect((await harness.connect("a", key)).statusCode).toBe(200);
    expect((await harness.connect("b", key)).statusCode).toBe(200);
    const refused = await harness.connect("c", key);
    expect(refused.statusCode).toBe(429);
    expect(refused.body).toContain("subscriptions.max_connections_per_key 2");
    await harness.disconnect("a");
    expect((await harness.connect("c", key)).statusCode).toBe(200);
  });

  it("a store that cannot register the connection refuses it with 503, no crash", async () => {
    harness = await socketHarness();
    harness.subscriptions.failing = true;
    const result = await harness.connect("c1");
    expect(result.statusCode).toBe(503);
    expect(result.body).toContain("cannot be registered right now");
  });

  it("counts against the key's requests_per_minute, as an HTTP request does", async () => {
    harness = await socketHarness({ config: KEYS });
    const slow = { query: { key: "slow-key-1234" } };
    expect((await harness.connect("a", slow)).statusCode).toBe(200);
    expect((await harness.connect("b", slow)).statusCode).toBe(200);
    expect((await harness.connect("c", slow)).statusCode).toBe(429);
  });
});

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
    harness = await socketHarness({ config: KEYS });
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
    harness = await socketHarness({ config: KEYS });
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

  it("a key over its requests_per_minute gets each call refused by its id", async () => {
    harness = await socketHarness({ config: KEYS });
    expect((await harness.connect("c1", { query: { key: "slow-key-1234" } })).statusCode).toBe(200);
    expect(await harness.call("c1", rpc(1, "eth_chainId"))).toMatchObject({ id: 1, result: "0x1" });
    expect(await harness.call("c1", [rpc(2, "eth_chainId"), rpc(3, "eth_chainId")])).toMatchObject([
      { id: 2, error: { code: -32005 } },
      { id: 3, error: { code: -32005 } },
    ]);
  });
});

describe("$default: eth_subscribe and eth_unsubscribe", () => {
  it("newHeads starts after the served head; logs keeps its filter; both listed for the follower", async () => {
    const h = await connected();
    const heads = (await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))) as { result: string };
    expect(heads.result).toMatch(/^0x[0-9a-f]{32}$/);
    const logs = (await h.call(
      "c1",
      rpc(2, "eth_subscribe", ["logs", { address: `0x${"A".repeat(40)}` }]),
    )) as { result: string };
    const listed = await h.subscriptions.list("net");
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          id: heads.result,
          kind: "newHeads",
          nextBlock: HEAD + 1,
          connection: "c1",
          filter: null,
        }),
        expect.objectContaining({
          id: logs.result,
          kind: "logs",
          filter: { address: [`0x${"a".repeat(40)}`] },
        }),
      ]),
    );
  });

  it.each([
    ["within the window", "0x5a", { result: expect.stringMatching(/^0x/) }, HEAD - 10 + 1],
    [
      "outside it",
      "0x1",
      { error: { code: -32602, message: expect.stringContaining("outside the resume window") } },
      null,
    ],
    [
      "ahead of the head",
      "0x65",
      { error: { code: -32602, message: expect.stringContaining("ahead of the chain's head") } },
      null,
    ],
  ])("resumeFrom %s", async (_name, resumeFrom, expected, next) => {
    const h = await connected({
      network: { block_time_seconds: 12, subscriptions: { resume_window_seconds: 600 } },
    });
    expect(await h.call("c1", rpc(1, "eth_subscribe", ["newHeads", { resumeFrom }]))).toMatchObject(
      expected,
    );
    const listed = await h.subscriptions.list("net");
    expect(listed.map((record) => record.nextBlock)).toEqual(next === null ? [] : [next]);
  });

  it("unsubscribe: true for its own, geth's 'subscription not found' for another's or an unknown id", async () => {
    const h = await connected();
    expect((await h.connect("c2")).statusCode).toBe(200);
    const { result: id } = (await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))) as {
      result: string;
    };
    expect(await h.call("c2", rpc(2, "eth_unsubscribe", [id]))).toEqual({
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32000, message: "subscription not found" },
    });
    expect(await h.call("c1", rpc(3, "eth_unsubscribe", ["0xnope"]))).toMatchObject({
      error: { code: -32000 },
    });
    expect(
      await h.call("c1", rpc(4, "eth_unsubscribe", [id.toUpperCase().replace("0X", "0x")])),
    ).toEqual({ jsonrpc: "2.0", id: 4, result: true });
    expect(await h.call("c1", rpc(5, "eth_unsubscribe", [id]))).toMatchObject({
      error: { message: "subscription not found" },
    });
  });

  it("a batch mixing subscriptions and calls is answered in order; past the connection's bound, from the call that crosses it", async () => {
    const h = await connected({ config: { subscriptions: { max_per_connection: 2 } } });
    const answer = (await h.call("c1", [
      rpc(1, "eth_subscribe", ["newHeads"]),
      rpc(2, "eth_chainId"),
      rpc(3, "eth_subscribe", ["newHeads"]),
      rpc(4, "eth_subscribe", ["logs", {}]),
      rpc(5, "eth_blockNumber"),
    ])) as Array<{ id: number; result?: unknown; error?: { code: number; message: string } }>;
    expect(answer.map((entry) => entry.id)).toEqual([1, 2, 3, 4, 5]);
    expect(answer[1]?.result).toBe("0x1");
    expect(answer[3]?.error).toMatchObject({
      code: -32005,
      message: expect.stringContaining("subscriptions.max_per_connection 2"),
    });
    expect(answer[4]?.result).toBe(`0x${HEAD.toString(16)}`);
    expect(await h.subscriptions.list("net")).toHaveLength(2);
  });

  it("bounds per key (over its connections) and per network name their config keys", async () => {
    const keys = [...KEYS.api_keys, { name: "bob", sha256: keyHash("bob-key-12345") }];
    harness = await socketHarness({
      config: { api_keys: keys, subscriptions: { max_per_key: 1, max_per_network: 2 } },
    });
    const alice = { query: { key: "alice-key-123" } };
    for (const id of ["a", "b"]) expect((await harness.connect(id, alice)).statusCode).toBe(200);
    expect((await harness.connect("x", { query: { key: "slow-key-1234" } })).statusCode).toBe(200);
    expect((await harness.connect("y", { query: { key: "bob-key-12345" } })).statusCode).toBe(200);
    expect(await harness.call("a", rpc(1, "eth_subscribe", ["newHeads"]))).toMatchObject({
      result: expect.any(String),
    });
    expect(await harness.call("b", rpc(2, "eth_subscribe", ["newHeads"]))).toMatchObject({
      error: { code: -32005, message: expect.stringContaining('API key "alice"') },
    });
    expect(await harness.call("x", rpc(3, "eth_subscribe", ["newHeads"]))).toMatchObject({
      result: expect.any(String),
    });
    expect(await harness.call("y", rpc(4, "eth_subscribe", ["newHeads"]))).toMatchObject({
      error: { code: -32005, message: expect.stringContaining("subscriptions.max_per_network 2") },
    });
  });

  it("a subscribe sent as a notification subscribes nothing; an unsubscribe sent so still unsubscribes", async () => {
    const h = await connected();
    expect(
      await h.call("c1", { jsonrpc: "2.0", method: "eth_subscribe", params: ["newHeads"] }),
    ).toBeUndefined();
    expect(await h.subscriptions.list("net")).toEqual([]);
    const { result: id } = (await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))) as {
      result: string;
    };
    expect(
      await h.call("c1", { jsonrpc: "2.0", method: "eth_unsubscribe", params: [id] }),
    ).toBeUndefined();
    expect(await h.subscriptions.list("net")).toEqual([]);
  });

  it("a store that fails answers -32603 with the call's id; the socket stays up", async () => {
    const h = await connected();
    h.subscriptions.failing = true;
    expect(await h.call("c1", rpc(9, "eth_subscribe", ["newHeads"]))).toMatchObject({
      id: 9,
      error: { code: -32603 },
    });
    expect(await h.call("c1", rpc(10, "eth_chainId"))).toMatchObject({ id: 10, result: "0x1" });
  });

  it("a subscription whose connection is gone is refused, asking to reconnect", async () => {
    const h = await connected();
    await h.subscriptions.disconnect("net", "c1");
    expect(await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))).toMatchObject({
      error: { code: -32000, message: expect.stringContaining("reconnect") },
    });
  });
});

describe("$disconnect and the rest", () => {
  it("$disconnect removes the connection and its subscriptions; a store failure there is logged, not thrown", async () => {
    const h = await connected();
    await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]));
    expect((await h.disconnect("c1")).statusCode).toBe(200);
    expect(await h.subscriptions.list("net")).toEqual([]);
    expect(await h.subscriptions.connection("net", "c1")).toBeNull();
    h.subscriptions.failing = true;
    expect((await h.disconnect("c1")).statusCode).toBe(200);
  });

  it("an event of no WebSocket route is a 400; a message to a network the config lacks is refused by id", async () => {
    harness = await socketHarness();
    const context = { getRemainingTimeInMillis: () => 1000 } as never;
    expect(
      (await harness.handler({ requestContext: { eventType: "OTHER" } } as never, context))
        .statusCode,
    ).toBe(400);
    const result = await harness.handler(
      {
        requestContext: {
          eventType: "MESSAGE",
          routeKey: "$default",
          connectionId: "c",
          stage: "gone",
        },
        body: JSON.stringify(rpc(7, "eth_chainId")),
      },
      context,
    );
    expect(JSON.parse(result.body ?? "")).toMatchObject({
      id: 7,
      error: { code: -32600, message: expect.stringContaining('unknown network "gone"') },
    });
  });

  it("a failure inside the handler is an internal error answer, never a stack trace", async () => {
    harness = await socketHarness();
    const context = { getRemainingTimeInMillis: () => 1000 } as never;
    const broken = {
      requestContext: {
        eventType: "MESSAGE",
        routeKey: "$default",
        connectionId: "c",
        get stage(): string {
          throw new Error("boom at /secret/path");
        },
      },
    };
    const result = await harness.handler(broken as never, context);
    expect(result).toEqual({
      statusCode: 200,
      body: '{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal gateway error"}}',
    });
  });
});
