import { describe, expect, it } from "vitest";
import type { ChainHead } from "../../../../functions/core/chain/chain-head.ts";
import { configSchema } from "../../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../../functions/core/config/network-model.ts";
import { ObservedHeads } from "../../../../functions/core/request/head/observed-head.ts";
import {
  reachableBlocks,
  servedHeadView,
  tagsToPin,
} from "../../../../functions/core/request/head/served-head.ts";
import {
  EMPTY_NETWORK_STATE,
  type QuorumSnapshot,
} from "../../../../functions/core/routing/network-state.ts";
import type { SelectionContext } from "../../../../functions/core/routing/selection.ts";

/**
 * The blocks each provider can have reached, as block-aware routing reads them (docs/behaviour.md
 * §3.1, §10.5): a stuck provider, one lying ahead, flipping or going back,
 * and a caller re-reading blocks. A head seen in an answer grows by the blocks made since that
 * answer; the monitor's head for the provider grows from its snapshot; the higher wins.
 */

const T = 1_800_000_000_000;
const SECOND = 1_000;

/** One provider's sighting: the block an answer showed, and when. */
type Sighting = readonly [provider: string, block: number, at: number];

function networkWith(blockTimeSeconds: number) {
  const model = buildModel(
    configSchema.parse({
      networks: {
        net: {
          chain_id: 1,
          block_time_seconds: blockTimeSeconds,
          // As the config bounds ask: room for what an honest provider leads by in 60 s.
          quorum: { max_ahead_blocks: Math.max(500, Math.ceil(60 / blockTimeSeconds)) },
          providers: [{ url: "http://honest.test" }, { url: "http://liar.test" }],
        },
      },
    }),
    (url) => url,
  );
  const network = model.networks.get("net");
  if (network === undefined) throw new Error("no network");
  return network;
}

/** Both providers at 100 in the monitor's snapshot at T. */
function snapshot(heads: Record<string, number> = { honest: 100, liar: 100 }): QuorumSnapshot {
  return {
    head: 100,
    headTimestamp: 0,
    members: Object.keys(heads),
    excluded: {},
    heads: Object.fromEntries(
      Object.entries(heads).map(([name, number]) => [name, { number, timestamp: 0 }]),
    ),
    computedAt: T,
  };
}

/** What each provider can have reached at `now`, after the given sightings were recorded. */
function reachAfter(
  sightings: readonly Sighting[],
  now: number,
  options: { blockTimeSeconds?: number; quorum?: QuorumSnapshot } = {},
): (provider: string) => number | null {
  const network = networkWith(options.blockTimeSeconds ?? 1);
  const quorum = options.quorum ?? snapshot();
  const observed = new ObservedHeads();
  for (const [provider, block, at] of sightings) observed.observe("net", provider, block, at);
  const context: SelectionContext = {
    network,
    now,
    checkIntervalSeconds: 15,
    demoted: new Set(),
    state: { ...EMPTY_NETWORK_STATE, quorum },
  };
  return reachableBlocks(
    quorum,
    observed.sightings(network, context),
    now,
    network.settings.block_time_seconds * SECOND,
  );
}

describe("a chain at genesis", () => {
  it("block 0 is a head like any other: reachable at once, not unknown", () => {
    const genesis = { ...snapshot({ honest: 0 }), head: 0 };
    expect(reachAfter([], T, { quorum: genesis })("honest")).toBe(0);
  });
});

describe("a stuck provider (1 s blocks, snapshot at T with both at 100)", () => {
  it.each<[string, Sighting[], number]>([
    // Stuck before the snapshot: the monitor's head grows as before until the next tick.
    [
      "stuck since before the snapshot: the monitor's estimate stands",
      [["liar", 100, T + 9 * SECOND]],
      110,
    ],
    // Stuck after reaching 103: its answer no longer carries the 10 s since the snapshot.
    [
      "stuck at 103 since T+3, seen again at T+9: 110, not 113",
      [
        ["liar", 103, T + 3 * SECOND],
        ["liar", 103, T + 9 * SECOND],
      ],
      110,
    ],
    ["stuck at 103 seen only at T+3: 110, not 113", [["liar", 103, T + 3 * SECOND]], 110],
  ])("%s", (_name, sightings, expected) => {
    expect(reachAfter(sightings, T + 10 * SECOND)("liar")).toBe(expected);
  });

  it("never reaches further than an honest provider that answered later", () => {
    const reach = reachAfter(
      [
        ["liar", 103, T + 3 * SECOND],
        ["liar", 103, T + 9 * SECOND],
        ["honest", 109, T + 9 * SECOND],
      ],
      T + 10 * SECOND,
    );
    expect(reach("liar")).toBe(110);
    expect(reach("honest")).toBe(110);
  });
});

describe("a provider lying about its head (1 s blocks, snapshot at T with both at 100)", () => {
  it.each<[string, Sighting[], number, number]>([
    // At T+10 the chain can have made 10 blocks; a sighting may lead that by 3.
    [
      "claims the most it may at T+10 (113): 3 past the chain, no further later",
      [["liar", 113, T + 10 * SECOND]],
      T + 20 * SECOND,
      123,
    ],
    [
      "regression: a claim of 114 at T+10, too far ahead then, was counted 10 s later (124, 4 past the chain); now ignored for good",
      [["liar", 114, T + 10 * SECOND]],
      T + 20 * SECOND,
      120,
    ],
    [
      "flips 105/100/105/100: the 105 at T+7 stands",
      [
        ["liar", 105, T + 5 * SECOND],
        ["liar", 100, T + 6 * SECOND],
        ["liar", 105, T + 7 * SECOND],
        ["liar", 100, T + 8 * SECOND],
      ],
      T + 10 * SECOND,
      110,
    ],
    [
      "goes back 108, 104, 101: the 108 stands",
      [
        ["liar", 108, T + 5 * SECOND],
        ["liar", 104, T + 6 * SECOND],
        ["liar", 101, T + 7 * SECOND],
      ],
      T + 10 * SECOND,
      113,
    ],
  ])("%s", (_name, sightings, now, expected) => {
    const reach = reachAfter(sightings, now);
    expect(reach("liar")).toBe(expected);
    // Another provider's answers never move the honest provider's estimate.
    expect(reach("honest")).toBe(100 + (now - T) / SECOND);
  });
});

describe("the known head a liar's answer can raise", () => {
  it("regression: a claim of 130 at T+1, 26 blocks past the chain then, raised the known head to 130 at T+27 (honest nulls for 128-130 judged behind); now never counts", () => {
    const network = networkWith(1);
    const observed = new ObservedHeads();
    observed.observe("net", "liar", 130, T + SECOND);
    const at = (now: number): SelectionContext => ({
      network,
      now,
      checkIntervalSeconds: 15,
      demoted: new Set(),
      state: { ...EMPTY_NETWORK_STATE, quorum: snapshot() },
    });
    expect(observed.highest(network, at(T + 27 * SECOND))).toBeNull();
  });

  it("a claim within the lead when made still counts", () => {
    const network = networkWith(1);
    const observed = new ObservedHeads();
    observed.observe("net", "liar", 104, T + SECOND);
    const context: SelectionContext = {
      network,
      now: T + 27 * SECOND,
      checkIntervalSeconds: 15,
      demoted: new Set(),
      state: { ...EMPTY_NETWORK_STATE, quorum: snapshot() },
    };
    expect(observed.highest(network, context)).toBe(104);
  });
});

describe("clock edges", () => {
  it.each<
    [string, Sighting[], number, number, { blockTimeSeconds?: number; quorum?: QuorumSnapshot }]
  >([
    [
      "an answer stamped after now counts no growth, never less than its block",
      [["honest", 103, T + 15 * SECOND]],
      T + 10 * SECOND,
      110,
      {},
    ],
    [
      "an answer stamped after now above the monitor's estimate: its block",
      [["honest", 112, T + 15 * SECOND]],
      T + 10 * SECOND,
      112,
      {},
    ],
    [
      "1 ms blocks: 10 s since the snapshot is 10,000 blocks",
      [["honest", 103, T + 9 * SECOND]],
      T + 10 * SECOND,
      10_100,
      { blockTimeSeconds: 0.001 },
    ],
    [
      "1 h blocks: any time since is at most one block",
      [["honest", 101, T + 9 * SECOND]],
      T + 10 * SECOND,
      102,
      { blockTimeSeconds: 3600 },
    ],
    [
      "1 h blocks, answer at now: its block",
      [["honest", 101, T + 10 * SECOND]],
      T + 10 * SECOND,
      101,
      { blockTimeSeconds: 3600 },
    ],
    [
      "a snapshot newer than the answer: the answer is superseded",
      [["honest", 103, T - 1]],
      T + 10 * SECOND,
      110,
      {},
    ],
  ])("%s", (_name, sightings, now, expected, options) => {
    expect(reachAfter(sightings, now, options)("honest")).toBe(expected);
  });
});

describe("pinning latest to the served head", () => {
  const head = (served: number, at: number): ChainHead => ({
    latest: { number: 100, hash: "0x01" },
    safe: null,
    finalized: null,
    served: { block: served, at },
    previousServed: null,
    updatedAt: T,
    reorgSeenAt: 0,
  });
  const delayMs = 2_500;

  it.each<[string, Sighting[], number, number | null]>([
    // The provider whose eth_blockNumber was published can have reached it a delay later.
    ["the publisher's answer pins the served head", [["honest", 107, T + 7 * SECOND]], 107, 107],
    [
      "re-read at the served block by a caller, the publisher still reaches it",
      [
        ["honest", 107, T + 7 * SECOND],
        ["honest", 107, T + 9 * SECOND],
      ],
      107,
      107,
    ],
    [
      "a liar's claim of 113 is not the served head: 107 pinned",
      [
        ["liar", 113, T + 9 * SECOND],
        ["honest", 107, T + 7 * SECOND],
      ],
      107,
      107,
    ],
  ])("%s", (_name, sightings, served, expected) => {
    const now = T + 10 * SECOND;
    const chainHead = head(served, T + 7 * SECOND);
    const view = servedHeadView(chainHead, now, delayMs, SECOND);
    const reach = reachAfter(sightings, now);
    expect(tagsToPin(chainHead, view, ["honest", "liar"], reach, now, 60_000)?.latest).toBe(
      expected,
    );
  });
});

describe("no tag pinned while the chain position is stale", () => {
  const chainHead: ChainHead = {
    latest: { number: 100, hash: "0x01" },
    safe: { number: 98, hash: "0x02" },
    finalized: { number: 90, hash: "0x03" },
    served: { block: 100, at: T - 10 * SECOND },
    previousServed: null,
    updatedAt: T,
    reorgSeenAt: 0,
  };
  it.each<[string, number, boolean]>([
    ["exactly as old as it may be: pinned", T + 60_000, true],
    ["a millisecond older: tags go upstream as written", T + 60_001, false],
  ])("%s", (_name, now, pinned) => {
    const view = servedHeadView(chainHead, now, 2_500, SECOND);
    const tags = tagsToPin(chainHead, view, ["honest"], () => 200, now, 60_000);
    expect(tags).toEqual(pinned ? { latest: 100, safe: 98, finalized: 90 } : null);
  });
});
