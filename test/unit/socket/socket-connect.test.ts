import { describe, expect, it } from "vitest";
import { harnessPerTest, KEYS, rpc } from "../../support/socket-harness.ts";

/**
 * The socket Lambda's `$connect` and `$disconnect` on in-memory parts (docs/behaviour.md
 * "Subscriptions over WebSocket"): who is let in (keys, origins, the key's connection bound,
 * its request limit), what a goodbye removes, and what an event of no route or a failure
 * inside is answered.
 */

const { start, connected } = harnessPerTest();

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
    const harness = await start({ config });
    const result = await harness.connect("c1", request);
    expect(result.statusCode).toBe(status);
    if (status !== 200)
      expect(JSON.parse(result.body ?? "")).toMatchObject({ id: null, error: {} });
  });

  it("a key holds at most max_connections_per_key connections; closing one lets the next in", async () => {
    const harness = await start({
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
    const harness = await start();
    harness.subscriptions.failing = true;
    const result = await harness.connect("c1");
    expect(result.statusCode).toBe(503);
    expect(result.body).toContain("cannot be registered right now");
  });

  it("counts against the key's requests_per_minute, as an HTTP request does", async () => {
    const harness = await start({ config: KEYS });
    const slow = { query: { key: "slow-key-1234" } };
    expect((await harness.connect("a", slow)).statusCode).toBe(200);
    expect((await harness.connect("b", slow)).statusCode).toBe(200);
    expect((await harness.connect("c", slow)).statusCode).toBe(429);
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
    const harness = await start();
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
    const harness = await start();
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
