import { describe, expect, it } from "vitest";
import {
  type EdgeSearchStart,
  type StateRead,
  searchStateEdge,
} from "../../../functions/core/history/state-edge.ts";

/**
 * The monitor's search for where a pruned provider's state starts (docs/behaviour.md §16.3):
 * from what is believed, with a budget of state reads, against providers whose state starts at
 * a known block, as a window near the head or far back.
 */

const TOP = 1_000_000;

/** A provider keeping state from `edge` (every older block refused), counting its reads. */
function provider(edge: number, options: { named?: boolean; failAt?: number } = {}) {
  const reads: number[] = [];
  const read = async (block: number): Promise<StateRead> => {
    reads.push(block);
    if (block === options.failAt) return { kind: "failed", error: "timeout" };
    if (block >= edge) return { kind: "served" };
    return options.named ? { kind: "refused", oldest: edge } : { kind: "refused" };
  };
  return { read, reads };
}

const start = (fields: Partial<EdgeSearchStart> = {}): EdgeSearchStart => ({
  refused: null,
  named: null,
  served: null,
  believed: 1,
  top: TOP,
  ...fields,
});

describe("searching for the oldest block a provider keeps", () => {
  it.each([
    ["a window of 64 blocks behind the top", TOP - 63],
    ["a window of 128 blocks (geth)", TOP - 127],
    ["a window of 10,064 blocks (reth full)", TOP - 10_063],
    ["a window one block wider than the first stride", TOP - 64],
  ])("%s: found exactly within 24 reads", async (_, edge) => {
    const node = provider(edge);
    const result = await searchStateEdge(start(), node.read, 24);
    expect(result).toMatchObject({ refused: edge - 1, served: edge, stale: false });
    expect(node.reads.length).toBeLessThanOrEqual(24);
    expect(result.notes[0]).toContain(`keeps state from block ${edge}`);
  });

  it("history expiry far back: found within two probes' budgets", async () => {
    const node = provider(15_537);
    const first = await searchStateEdge(start(), node.read, 24);
    const second = await searchStateEdge(
      start({ refused: first.refused, served: first.served }),
      node.read,
      24,
    );
    expect(second).toMatchObject({ refused: 15_536, served: 15_537 });
    expect(node.reads.length).toBeLessThanOrEqual(48);
  });

  it("an archive: one read of the believed block, served", async () => {
    const node = provider(0);
    const result = await searchStateEdge(start(), node.read, 24);
    expect(node.reads).toEqual([1]);
    expect(result).toMatchObject({ refused: null, served: 1 });
  });

  it("a lesson's block served: the lesson is stale", async () => {
    const node = provider(0);
    const result = await searchStateEdge(start({ refused: 500 }), node.read, 24);
    expect(result).toMatchObject({ stale: true, refused: null, served: 500 });
    expect(node.reads).toEqual([500]);
  });

  it("the provider's own word on its oldest block, checked with one read, settles it", async () => {
    const node = provider(TOP - 5000, { named: true });
    const result = await searchStateEdge(start(), node.read, 24);
    expect(node.reads).toEqual([1, TOP - 5000]);
    expect(result).toMatchObject({ refused: TOP - 5001, served: TOP - 5000, named: TOP - 5000 });
  });

  it("a named oldest block that is refused is no word: the search goes on", async () => {
    const reads: number[] = [];
    const liar = async (block: number): Promise<StateRead> => {
      reads.push(block);
      return block >= TOP - 100 ? { kind: "served" } : { kind: "refused", oldest: 10 };
    };
    const result = await searchStateEdge(start(), liar, 24);
    expect(result).toMatchObject({ refused: TOP - 101, served: TOP - 100 });
  });

  it("a budget spent: what was proved is kept, and the next search goes on from it", async () => {
    const node = provider(TOP - 100_000);
    const first = await searchStateEdge(start(), node.read, 6);
    expect(node.reads.length).toBe(6);
    expect(first.refused).not.toBeNull();
    expect(first.served).not.toBeNull();
    const second = await searchStateEdge(
      start({ refused: first.refused, served: first.served }),
      node.read,
      24,
    );
    expect(second).toMatchObject({ refused: TOP - 100_001, served: TOP - 100_000 });
  });

  it("the edge the last probe found has moved up with the head: searched again above it", async () => {
    const node = provider(TOP - 63);
    const result = await searchStateEdge(
      start({ refused: TOP - 200, served: TOP - 150 }),
      node.read,
      24,
    );
    expect(node.reads.slice(0, 2)).toEqual([TOP - 200, TOP - 150]);
    expect(result).toMatchObject({ refused: TOP - 64, served: TOP - 63 });
  });

  it("a read that fails stops the search with what it proved", async () => {
    const node = provider(TOP - 127, { failAt: TOP - 64 });
    const result = await searchStateEdge(start(), node.read, 24);
    expect(result).toMatchObject({ refused: 1, served: null });
    expect(result.notes.join(" ")).toContain("failed: timeout");
  });

  it("no head: the believed block alone", async () => {
    const node = provider(500);
    const result = await searchStateEdge(start({ top: null }), node.read, 24);
    expect(node.reads).toEqual([1]);
    expect(result).toMatchObject({ refused: 1, served: null });
  });
});
