import { describe, expect, it } from "vitest";
import type { LogLevel, Telemetry } from "../../../../functions/core/ports.ts";
import { CONTRACT, FakeChain, FakeChainUpstream } from "../../../support/fake-chain.ts";
import { gatewayHarness } from "../../../support/gateway-harness.ts";
import { MemoryFilterStore } from "../../../support/memory-filter-store.ts";

/**
 * Filters the gateway holds across reorgs (docs/behaviour.md §14): a block a filter reported
 * that the chain replaced is noticed at the next poll; the replaced logs come again marked
 * `removed: true` (when a provider still has them), then the new branch's, each once; reads
 * that disagree (logs of another branch than the headers) report nothing until they agree.
 */

const NOW = 1_800_000_000_000;
const P1 = "http://p1.test/";
const P2 = "http://p2.test/";

function setup(chain = new FakeChain(10)) {
  const lines: Array<{ level: LogLevel; message: string; fields?: Record<string, unknown> }> = [];
  const telemetry: Telemetry = {
    log: (level, message, fields) => lines.push({ level, message, ...(fields ? { fields } : {}) }),
    count: () => undefined,
    measure: () => undefined,
  };
  const filters = new MemoryFilterStore();
  const h = gatewayHarness({
    providers: [
      { name: "p1", url: P1 },
      { name: "p2", url: P2 },
    ],
    network: { block_time_seconds: 1 },
    now: NOW,
    upstream: (advance) => new FakeChainUpstream(chain, advance).provider(P1).provider(P2),
    deps: { filters, telemetry },
  });
  let id = 0;
  const call = async (method: string, params: unknown[] = []) =>
    JSON.parse(
      (await h.rpc(JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }))).body,
    ) as { result?: unknown; error?: { code: number; message: string } };
  const changes = async (filter: unknown) =>
    ((await call("eth_getFilterChanges", [filter])).result as unknown[]).map((item) =>
      typeof item === "string" ? item : JSON.stringify(item),
    );
  return { ...h, chain, filters, lines, call, changes };
}

const removed = (texts: readonly string[]) =>
  texts.map((text) => JSON.stringify({ ...JSON.parse(text), removed: true }));

describe("a log filter across a reorg", () => {
  it("reports the replaced blocks' logs as removed, then the new branch's, each once", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(3);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(11, 13));
    const replaced = t.chain.logsOf(12, 13);
    t.chain.reorg(2, { logs: 2 });
    expect(await t.changes(id)).toEqual([...removed(replaced), ...t.chain.logsOf(12, 13)]);
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(1);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(14, 14));
    const reorg = t.lines.find((line) => line.message === "filter saw a reorg");
    expect(reorg?.level).toBe("warn");
    expect(reorg?.fields).toMatchObject({ replaced_blocks: 2, removed_logs_unavailable: 0 });
  });

  it("a reorg that also grew the chain reports the new branch up to the new head", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(11, 12));
    const replaced = t.chain.logsOf(12, 12);
    t.chain.reorg(1, { grow: 3 });
    expect(await t.changes(id)).toEqual([...removed(replaced), ...t.chain.logsOf(12, 15)]);
  });

  it("when no provider still has the replaced blocks, the new branch comes all the same, and the operator is told", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(3);
    await t.changes(id);
    t.chain.reorg(2, { forget: true });
    expect(await t.changes(id)).toEqual(t.chain.logsOf(12, 13));
    const reorg = t.lines.find((line) => line.message === "filter saw a reorg");
    expect(reorg?.fields).toMatchObject({ replaced_blocks: 2, removed_logs_unavailable: 2 });
  });

  it("a reorg of blocks without the filter's logs reports nothing removed", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2, 1).mine(2, 0);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(11, 14));
    t.chain.reorg(2, { logs: 0 });
    expect(await t.changes(id)).toEqual([]);
    t.chain.mine(1);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(15, 15));
  });

  it("remembers only the blocks with logs and the last one read, and a fork among blocks without logs reports nothing twice", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(1, 1).mine(3, 0).mine(1, 1);
    expect(await t.changes(id)).toEqual(t.chain.logsOf(11, 15));
    t.chain.mine(2, 0);
    expect(await t.changes(id)).toEqual([]);
    const remembered = () => [...t.filters.held("net", "*").values()][0]?.seen.map((b) => b.number);
    expect(remembered()).toEqual([11, 15, 17]);
    const replaced = t.chain.logsOf(15, 15);
    t.chain.reorg(4, { logs: 1 });
    expect(await t.changes(id)).toEqual([...removed(replaced), ...t.chain.logsOf(14, 17)]);
    expect(remembered()).toEqual([11, 14, 15, 16, 17]);
  });

  it("logs from a log index on another branch than the headers are not reported until the reads agree", async () => {
    const chain = new FakeChain(10);
    const fork = chain.copy(9);
    const t = setup(chain);
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    chain.mine(2);
    fork.mine(2);
    t.upstream.provider(P1, { logsFrom: fork }).provider(P2, { logsFrom: fork });
    expect(await t.changes(id)).toEqual([]);
    expect([...t.filters.held("net", "*").values()][0]?.cursor).toBe(11);
    t.upstream.provider(P1).provider(P2);
    expect(await t.changes(id)).toEqual(chain.logsOf(11, 12));
  });
});

describe("a block filter across a reorg", () => {
  it("reports the new branch's hashes from the fork point", async () => {
    const t = setup();
    const id = (await t.call("eth_newBlockFilter")).result;
    t.chain.mine(3, 0);
    expect(await t.changes(id)).toEqual([11, 12, 13].map((n) => t.chain.block(n)?.hash));
    t.chain.reorg(2, { logs: 0, grow: 1 });
    expect(await t.changes(id)).toEqual([12, 13, 14].map((n) => t.chain.block(n)?.hash));
    expect(await t.changes(id)).toEqual([]);
  });

  it("a reorg at the same height with nothing new is seen by the newest block's header", async () => {
    const t = setup();
    const id = (await t.call("eth_newBlockFilter")).result;
    t.chain.mine(2, 0);
    await t.changes(id);
    t.chain.reorg(1, { logs: 0 });
    expect(await t.changes(id)).toEqual([t.chain.block(12)?.hash]);
  });
});

describe("what a poll costs", () => {
  it("a poll with new logs reads the head, the logs and one batch of headers; an idle one the head and the newest block", async () => {
    const t = setup();
    const id = (await t.call("eth_newFilter", [{ address: CONTRACT }])).result;
    t.chain.mine(2);
    const before = t.upstream.calls.length;
    await t.changes(id);
    const busy = t.upstream.calls.slice(before).map((call) => call.method);
    expect(busy.filter((method) => method === "eth_getLogs")).toHaveLength(1);
    expect(busy.filter((method) => method === "eth_blockNumber")).toHaveLength(1);
    // Headers of the blocks with logs and of the last block read, in one batch.
    expect(busy.filter((method) => method === "eth_getBlockByNumber")).toHaveLength(2);
    const idleFrom = t.upstream.calls.length;
    await t.changes(id);
    expect(
      t.upstream.calls
        .slice(idleFrom)
        .map((call) => call.method)
        .sort(),
    ).toEqual(["eth_blockNumber", "eth_getBlockByNumber"]);
  });
});
