import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";
import type { HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer, type SentCall } from "../../../support/scripted-upstream.ts";
import { P1, P2, settledChainHarness } from "../../../support/settled-chain-harness.ts";

/**
 * A filter a provider installed (not one the gateway serves: docs/behaviour.md §14.1) lives on
 * that provider alone: every call about filters keeps one provider order, a poll that reaches
 * a provider without it is no fault of that provider, and a filter nobody holds gets the
 * node's own "filter not found". The pipeline on a settled chain, no filter store.
 */
const hex = (n: number) => `0x${n.toString(16)}`;
const _HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

const call = (id: number, method: string, block: string) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: [block] });

/**
 * A node holding the filters `installed` (each id answers `changes`), answering "filter not
 * found" for any other, as geth and anvil do; any other call gets "0x1".
 */
const filterNode = (installed: readonly string[]) => (request: UpstreamRequest) => {
  const call = JSON.parse(request.body) as SentCall;
  const body = call.method.startsWith("eth_getFilter")
    ? installed.includes(String(call.params[0]))
      ? { result: ["0xaa"] }
      : { error: { code: -32000, message: "filter not found" } }
    : { result: "0x1" };
  return answer(JSON.stringify({ jsonrpc: "2.0", id: call.id, ...body }));
};

const poll = (id: number, filter: string, method = "eth_getFilterChanges") =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params: [filter] });

describe("a filter polled through the gateway: it lives on the one provider that installed it", () => {
  const ordered: Providers = [
    { name: "p1", url: P1, priority: 1 },
    { name: "p2", url: P2, priority: 2 },
  ];

  it("regression: a poll that reached a provider without the filter got 'filter not found' (the caller's events lost), and three in a row force-rotated that healthy provider away; now the provider holding it answers, and the other is not penalised", async () => {
    const h = harness(ordered);
    h.upstream.script(P1, filterNode(["0xf1"])).script(P2, filterNode([]));
    for (let id = 1; id <= 4; id++) {
      const response = await h.rpc(poll(id, "0xf1"));
      expect(response.json.result).toEqual(["0xaa"]);
      expect(response.headers["x-gateway-provider"]).toBe("p1");
    }
    const logs = await h.rpc(poll(5, "0xf1", "eth_getFilterLogs"));
    expect(logs.json.result).toEqual(["0xaa"]);
    // Still first for everything else: not demoted, not blacklisted.
    const read = await h.rpc(call(6, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p2");
    expect(h.store.healthWrites).toEqual([]);
  });

  it("holds: a filter no provider holds (expired, or made up) gets the node's own 'filter not found', after each provider is asked once, and nobody is penalised", async () => {
    const h = harness(ordered);
    h.upstream.script(P1, filterNode([])).script(P2, filterNode([]));
    for (let id = 1; id <= 4; id++) {
      const response = await h.rpc(poll(id, "0xdead"));
      expect(response.json.error).toEqual({ code: -32000, message: "filter not found" });
    }
    expect(h.upstream.callsTo(P1) + h.upstream.callsTo(P2)).toBe(8);
    const read = await h.rpc(call(5, "eth_getBlockTransactionCountByNumber", hex(110)));
    expect(read.headers["x-gateway-provider"]).toBe("p2");
    expect(h.store.healthWrites).toEqual([]);
  });

  it("regression: with two providers of one priority, each poll drew its own order and about half went first to the provider without the filter (an extra upstream call each); now every call about filters keeps one order, so a filter is installed and polled on the same provider", async () => {
    let draw = 0;
    // Two draws a request, in turn p2 then p1 first: a plain read's order changes each time.
    const h = harness(
      [
        { name: "p1", url: P1 },
        { name: "p2", url: P2 },
      ],
      () => [0.2, 0.8, 0.8, 0.2][draw++ % 4] ?? 0.5,
    );
    const installs = (request: UpstreamRequest) => {
      const sent = JSON.parse(request.body) as SentCall;
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, result: "0xf1" }));
    };
    h.upstream.script(P1, installs).script(P2, installs);
    const install = await h.rpc(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_newBlockFilter", params: [] }),
    );
    const holder = install.headers["x-gateway-provider"];
    const [holderUrl, otherUrl] = holder === "p1" ? [P1, P2] : [P2, P1];
    h.upstream.script(holderUrl, filterNode(["0xf1"])).script(otherUrl, filterNode([]));
    for (let id = 2; id <= 7; id++) {
      const response = await h.rpc(poll(id, "0xf1"));
      expect(response.json.result).toEqual(["0xaa"]);
    }
    expect(h.upstream.callsTo(otherUrl)).toBe(0);
  });
});
