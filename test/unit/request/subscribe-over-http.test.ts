import { describe, expect, it } from "vitest";
import { gatewayHarness } from "../../support/gateway-harness.ts";
import { resultFor, type ScriptedUpstream } from "../../support/scripted-upstream.ts";

/**
 * `eth_subscribe` and `eth_unsubscribe` are the WebSocket API's (docs/behaviour.md §15.5):
 * sent over HTTP they get geth's -32601 "notifications not supported" at once, naming the way,
 * and no provider is asked (its HTTP endpoint cannot push, and a subscription made there would
 * die with it). The other calls of the same batch are served as ever.
 */

const P1 = "http://p1.example";
const NOW = 1_800_000_000_000;

function harness() {
  const h = gatewayHarness<ScriptedUpstream>({ providers: [{ name: "p1", url: P1 }], now: NOW });
  h.upstream.script(
    P1,
    resultFor((method) => (method === "eth_chainId" ? "0x1" : null)),
  );
  return h;
}

const call = (id: number | null, method: string, params: unknown[] = []) =>
  JSON.stringify({ jsonrpc: "2.0", ...(id === null ? {} : { id }), method, params });

describe("a subscription asked for over HTTP", () => {
  it.each([
    ["eth_subscribe", ["newHeads"]],
    ["eth_unsubscribe", [`0x${"ab".repeat(16)}`]],
  ])(
    "regression: %s went to a provider over HTTP; now -32601 naming the WebSocket API, no provider asked",
    async (method, params) => {
      const h = harness();
      const response = await h.rpc(call(7, method, params));
      expect(response.status).toBe(200);
      expect(JSON.parse(response.body)).toEqual({
        jsonrpc: "2.0",
        id: 7,
        error: {
          code: -32601,
          message: expect.stringMatching(
            new RegExp(
              `^notifications not supported over HTTP: ${method} is served by the gateway's WebSocket API`,
            ),
          ),
        },
      });
      expect(h.upstream.callsTo(P1)).toBe(0);
    },
  );

  it("in a batch: its member answered in place, the others served, a notification left out", async () => {
    const h = harness();
    const response = await h.rpc(
      `[${[call(1, "eth_chainId"), call(2, "eth_subscribe", ["newHeads"]), call(null, "eth_subscribe", ["newHeads"])].join(",")}]`,
    );
    const answers = JSON.parse(response.body) as Array<{
      id: number;
      result?: unknown;
      error?: { code: number };
    }>;
    expect(answers.map((one) => [one.id, one.result ?? one.error?.code])).toEqual([
      [1, "0x1"],
      [2, -32601],
    ]);
    expect(
      h.upstream.calls.get(P1)?.map((request) => request.body.includes("eth_subscribe")),
    ).toEqual([false]);
  });
});
