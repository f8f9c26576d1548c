import { describe, expect, it } from "vitest";
import { HEAD, harnessPerTest, KEYS, keyHash, rpc } from "../../support/socket-harness.ts";

/**
 * The socket Lambda's `$default` for `eth_subscribe` and `eth_unsubscribe`, on in-memory parts
 * (docs/behaviour.md "Subscriptions over WebSocket"): where a stream starts, resuming,
 * removals only by their owner, batches in order, the bounds and a failing store.
 */

const { start, connected } = harnessPerTest();

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
    const harness = await start({
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

  it("regression: a batch whose answer was over 128 KB subscribed without telling the client its id; now the subscription's answer stays and only the big answers are errors", async () => {
    const h = await connected({
      result: (method) => (method === "eth_call" ? `0x${"ab".repeat(70_000)}` : undefined),
    });
    const answer = (await h.call("c1", [
      rpc(1, "eth_call", [{ to: `0x${"1".repeat(40)}`, data: "0x" }, "latest"]),
      rpc(2, "eth_subscribe", ["newHeads"]),
    ])) as Array<{ id: number; result?: string; error?: { message: string } }>;
    expect(answer[0]).toMatchObject({
      id: 1,
      error: { message: expect.stringContaining("128 KB") },
    });
    const listed = await h.subscriptions.list("net");
    expect(answer[1]).toEqual({ jsonrpc: "2.0", id: 2, result: listed[0]?.id });
  });
  it.each([
    ["methods_deny", { methods_deny: ["eth_subscribe", "eth_unsubscribe"] }],
    ["methods_allow", { methods_allow: ["eth_chainId"] }],
  ])(
    "regression: a network's %s refused eth_subscribe over HTTP but the socket subscribed anyway; now -32601 as for any refused method, nothing recorded",
    async (_name, network) => {
      const h = await connected({ network });
      const refused = (method: string) => ({
        jsonrpc: "2.0",
        error: { code: -32601, message: `method ${method} is not allowed by this gateway` },
      });
      expect(await h.call("c1", rpc(1, "eth_subscribe", ["newHeads"]))).toMatchObject({
        id: 1,
        ...refused("eth_subscribe"),
      });
      expect(
        await h.call("c1", [rpc(2, "eth_unsubscribe", ["0x1"]), rpc(3, "eth_chainId")]),
      ).toMatchObject([
        { id: 2, ...refused("eth_unsubscribe") },
        { id: 3, result: "0x1" },
      ]);
      // A notification refused gets no reply, as over HTTP.
      expect(
        await h.call("c1", { jsonrpc: "2.0", method: "eth_subscribe", params: ["newHeads"] }),
      ).toBeUndefined();
      expect(await h.subscriptions.list("net")).toEqual([]);
    },
  );
});
