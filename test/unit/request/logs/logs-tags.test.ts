import { describe, expect, it } from "vitest";
import { everyoneInQuorum, gatewayHarness } from "../../../support/gateway-harness.ts";
import {
  CONTRACT,
  chainScript,
  FakeChain,
  hashOf,
  type MethodCounts,
} from "../../../support/log-chain-script.ts";

/**
 * A log range whose end is a tag, with `latest` pinned to a served head behind the block the
 * caller names (docs/behaviour.md §12.1): never sent upstream inverted, never a silent `[]`.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const HEAD = 100;
const SERVED = 95;
const hex = (n: number) => `0x${n.toString(16)}`;

function setup() {
  const h = gatewayHarness({
    providers: [{ name: "p1", url: P1 }],
    network: { block_time_seconds: 1 },
    now: NOW,
  });
  const seen: MethodCounts = new Map();
  const sent: string[] = [];
  const script = chainScript(new FakeChain(HEAD), {}, seen);
  h.upstream.script(P1, (request, call) => {
    sent.push(request.body);
    return script(request, call);
  });
  everyoneInQuorum(h.store, [{ name: "p1", url: P1 }], {
    head: HEAD,
    timestamp: NOW / 1000,
    computedAt: NOW,
  });
  h.store.setHead("net", {
    latest: { number: HEAD, hash: hashOf(HEAD) },
    safe: null,
    finalized: { number: 30, hash: hashOf(30) },
    // Published a minute ago: `latest` is pinned to it.
    served: { block: SERVED, at: NOW - 60_000 },
    previousServed: null,
    updatedAt: NOW,
    reorgSeenAt: 0,
  });
  return { ...h, seen, sent };
}

const fromTo = (from: unknown, to: unknown) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 4,
    method: "eth_getLogs",
    params: [{ address: CONTRACT, fromBlock: from, toBlock: to }],
  });

const blocksOf = (body: string) =>
  ((JSON.parse(body) as { result?: Array<{ blockNumber: string }> }).result ?? []).map((log) =>
    Number(log.blockNumber),
  );

describe("a log range pinning would invert", () => {
  it("regression: {fromBlock: a receipt's block, toBlock: latest} went upstream inverted (toBlock pinned 3 blocks under it) and answered []; now `latest` goes as written", async () => {
    const h = setup();
    const response = await h.rpc(fromTo(hex(98), "latest"));
    expect(blocksOf(response.body)).toEqual([98, 99, 100]);
    expect(h.sent.some((body) => body.includes(`"toBlock":"latest"`))).toBe(true);
    expect(h.sent.some((body) => body.includes(`"toBlock":"${hex(SERVED)}"`))).toBe(false);
  });

  it("a fromBlock above every head the gateway knows: -32602 naming that head, no provider asked", async () => {
    const h = setup();
    const response = await h.rpc(fromTo(hex(0x200), "latest"));
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({
      jsonrpc: "2.0",
      id: 4,
      error: {
        code: -32602,
        message:
          "fromBlock 0x200 is above the chain head this gateway knows (0x64): ask for blocks up to it",
      },
    });
    // Only the served head's background poll (docs/behaviour.md §10.2: nothing was published
    // for a minute) reaches the provider: no log query.
    expect(h.sent.filter((body) => !body.includes('"id":"gateway-head"'))).toEqual([]);
  });

  it("a range pinning leaves in order is pinned as before", async () => {
    const h = setup();
    const response = await h.rpc(fromTo(hex(90), "latest"));
    expect(blocksOf(response.body)).toEqual([90, 91, 92, 93, 94, 95]);
    expect(h.sent.some((body) => body.includes(`"toBlock":"${hex(SERVED)}"`))).toBe(true);
  });

  it("a range the caller wrote inverted is the node's to answer, as written", async () => {
    const h = setup();
    await h.rpc(fromTo(hex(99), hex(97)));
    expect(
      h.sent.some((body) => body.includes(`"fromBlock":"${hex(99)}","toBlock":"${hex(97)}"`)),
    ).toBe(true);
  });
});
