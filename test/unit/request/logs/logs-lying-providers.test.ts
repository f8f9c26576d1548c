import { describe, expect, it } from "vitest";
import type { BlockRange } from "../../../../functions/core/request/logs/logs-range.ts";
import {
  type SplitDeps,
  serveInPieces,
} from "../../../../functions/core/request/logs/logs-split.ts";

/**
 * One log query's pieces (docs/behaviour.md §12) against a provider that lies in its range
 * refusals: the cap it states is not the one it enforces.
 */

const logsText = (range: BlockRange) =>
  `{"jsonrpc":"2.0","id":1,"result":[{"blockNumber":"0x${range.from.toString(16)}","logIndex":"0x0"}]}`;

/** One provider that refuses spans over `cap` blocks, stating `stated` as its cap. */
function lyingProvider(cap: number, stated: string) {
  let learned = Number.POSITIVE_INFINITY;
  const served: BlockRange[] = [];
  const shared: number[] = [];
  const deps: SplitDeps = {
    pieceSize: (range) => Math.min(learned, range.to - range.from + 1),
    serve: async (piece) => {
      served.push(piece);
      const text =
        piece.to - piece.from + 1 > cap
          ? `{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"exceed maximum block range: ${stated}"}}`
          : logsText(piece);
      return { text, provider: "liar", error: "", upstreamCalls: 1 };
    },
    learn: (_, blocks) => {
      learned = Math.min(learned, blocks);
    },
    share: (_, blocks) => shared.push(blocks),
    concurrency: 4,
    maxUpstreamCalls: 50,
    attemptsPerPiece: 3,
    maxBytes: 1_000_000,
    maxEscapedBytes: 1_000_000,
    clock: () => 0,
    deadline: 1,
  };
  const liar = { deps, served, shared, learned: () => learned };
  return liar;
}

describe("serveInPieces against a provider whose stated cap is a lie", () => {
  it("regression: a cap of 1 stated against 10^8 blocks was believed and ran the process out of memory making the pieces; now the caller is told the range needs too many calls", async () => {
    const liar = lyingProvider(10, "1");
    const outcome = await serveInPieces({ from: 0, to: 100_000_000 }, liar.deps);
    expect(outcome).toMatchObject({
      kind: "too_many_pieces",
      needed: 100_000_001,
      size: 1,
      upstreamCalls: 1,
    });
    expect(liar.served).toHaveLength(1);
  });

  it("regression: a refusal over 2,000 blocks stating a cap of 1,000 when the provider takes 10 spent every upstream call left on pieces; now none is sent once the pieces are known to be too many", async () => {
    const liar = lyingProvider(10, "1000");
    const outcome = await serveInPieces({ from: 0, to: 1999 }, liar.deps);
    // Whole (refused, 1,000 learned), two pieces of 1,000 (refused, learned as halves: 500),
    // then 4 of 500 ... until the pieces needed exceed the 50 calls.
    expect(outcome.kind).toBe("too_many_pieces");
    expect(outcome.upstreamCalls).toBeLessThan(50);
  });

  it("regression: a cap of 10^12 stated by a provider that takes 100 blocks shrank the pieces a block per refusal and failed a 1,000-block query after 48 calls; now it is halved", async () => {
    const liar = lyingProvider(100, "1000000000000");
    const outcome = await serveInPieces({ from: 0, to: 999 }, liar.deps);
    expect(outcome).toMatchObject({ kind: "logs", whole: false });
    expect(liar.learned()).toBeLessThanOrEqual(100);
    expect(outcome.upstreamCalls).toBeLessThanOrEqual(40);
  });

  it.each([
    ["the span it refused", "1000"],
    ["0", "0"],
  ])("a cap stated as %s is not believed: halves", async (_, stated) => {
    const liar = lyingProvider(100, stated);
    const outcome = await serveInPieces({ from: 0, to: 999 }, liar.deps);
    expect(outcome).toMatchObject({ kind: "logs", whole: false });
    expect(liar.served[1]).toMatchObject({ from: 0, to: 499 });
  });

  it("a cap stated truly is learned at once: the next pieces are that size", async () => {
    const liar = lyingProvider(100, "100");
    const outcome = await serveInPieces({ from: 0, to: 999 }, liar.deps);
    expect(outcome).toMatchObject({ kind: "logs", upstreamCalls: 11 });
    expect(liar.shared).toEqual([100]);
  });

  it("regression: one block refused in range words taught the provider a range of 1 block for every container; now what is shared is never under the widest span it answered", async () => {
    const liar = lyingProvider(Number.POSITIVE_INFINITY, "");
    const bad = 150;
    liar.deps = {
      ...liar.deps,
      serve: async (piece) => {
        liar.served.push(piece);
        const text =
          piece.from <= bad && bad <= piece.to
            ? `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"please retry with a smaller block range"}}`
            : logsText(piece);
        return { text, provider: "liar", error: "", upstreamCalls: 1 };
      },
    };
    const outcome = await serveInPieces({ from: 0, to: 299 }, liar.deps);
    expect(outcome).toMatchObject({ kind: "failed", piece: { from: bad, to: bad } });
    expect(liar.shared).toEqual([150]);
  });
});
