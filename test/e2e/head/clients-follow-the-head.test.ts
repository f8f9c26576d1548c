import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HeadScenes, startHeadScenes } from "../../support/head-scenes.ts";
import { type IndexerSceneResult, runIndexerScene } from "../../support/indexer-scene.ts";
import type { Tally } from "../../support/indexers.ts";

/**
 * "Nothing lost, no stale data" as users' clients meet it near the head (issue 25; docs/
 * behaviour.md §10, §12), on real parts: anvil chains, provider fronts, four proxy runtimes
 * over one DynamoDB behind the API Gateway emulator, the monitor on its default 15 s checks.
 * - Four indexers follow a 1 s chain with an event in every block for a minute through a
 *   troubled provider and two honest ones (indexer-scene.ts): each must hold exactly the
 *   chain's own logs, none missing, none twice, none off the chain, and meet no error it
 *   cannot retry past.
 * - A `latest` that is the chain's (head-scenes.ts): viem's deploy → wait → read 20 times in a
 *   row on a 2 s chain, the range from a receipt's block to `latest`, a filter from `latest` to
 *   `latest`, a devnet restarted 300 blocks lower, and the served head's lag figures.
 * The scenes wait on blocks, so they run side by side: the file costs about a minute and a half.
 * Figures are printed for the record.
 */

const DEPLOYS = 20;
const FILTER_POKES = 3;
const FOLLOW_WITHIN_MS = 60_000;

let indexerScene: Promise<IndexerSceneResult>;
let heads: HeadScenes;

beforeAll(async () => {
  indexerScene = runIndexerScene();
  indexerScene.catch(() => undefined);
  heads = await startHeadScenes({
    deploys: DEPLOYS,
    filterPokes: FILTER_POKES,
    followWithinMs: FOLLOW_WITHIN_MS,
  });
}, 90_000);

afterAll(async () => {
  await Promise.allSettled([indexerScene, heads?.done]);
}, 150_000);

const SCENE_MS = 150_000;

async function tallyOf(name: string): Promise<Tally> {
  const tally = (await indexerScene).tallies.get(name);
  if (tally === undefined) throw new Error(`no tally for ${name}`);
  return tally;
}

const exactlyTheChain = (tally: Tally) => ({
  onChain: tally.onChain,
  got: tally.onChain,
  missing: 0,
  duplicates: 0,
  notCanonical: 0,
  missingBlocks: [],
});

/**
 * Where the promise fails on today's gateway (issue 25), `it.fails` keeps the suite green until
 * the fix lands; then the case is made `it` again: the cursor loop and watchEvent with the log
 * answers checked against the block (branch logs-check), watchContractEvent, the errors and
 * the filter from latest to latest with filters served by the gateway (gw-filters), deploy →
 * wait → read and the restart with a fresh head (fresh-head).
 */
describe("four indexers follow the head for a minute through a troubled provider", () => {
  it(
    "the scene is the one promised: a minute of blocks with events, the troubled provider in use",
    async () => {
      const scene = await indexerScene;
      console.log(
        `[indexer scene] blocks ${scene.window.from}-${scene.window.to}; the troubled provider's calls: ${JSON.stringify(Object.fromEntries(scene.troubledCalls))}\n${[...scene.tallies.values()].map((tally) => JSON.stringify(tally)).join("\n")}\nsubsquid: ${scene.squidCrashes.length} crashes, ${scene.squidDuplicates} logs stored twice`,
      );
      const blocks = scene.window.to - scene.window.from + 1;
      expect(blocks).toBeGreaterThanOrEqual(55);
      expect((await tallyOf("cursor loop")).onChain).toBeGreaterThanOrEqual(1.4 * blocks);
      // It had its share of the log queries before its outage. Filters are the gateway's
      // (docs/behaviour.md §14): no provider is asked to install one.
      expect(scene.troubledCalls.get("eth_getLogs") ?? 0).toBeGreaterThanOrEqual(20);
      expect(scene.troubledCalls.get("eth_newFilter") ?? 0).toBe(0);
    },
    SCENE_MS,
  );

  it(
    "the cursor loop (eth_blockNumber, then eth_getLogs from cursor + 1 to it) gets every log exactly once",
    async () => {
      const tally = await tallyOf("cursor loop");
      expect(tally).toMatchObject(exactlyTheChain(tally));
    },
    SCENE_MS,
  );

  it(
    "viem's watchEvent polling eth_getLogs gets every log exactly once",
    async () => {
      const tally = await tallyOf("viem watchEvent (eth_getLogs)");
      expect(tally).toMatchObject(exactlyTheChain(tally));
    },
    SCENE_MS,
  );

  it(
    "viem's watchContractEvent on filters gets every log exactly once",
    async () => {
      const tally = await tallyOf("viem watchContractEvent (filter)");
      expect(tally).toMatchObject(exactlyTheChain(tally));
    },
    SCENE_MS,
  );

  it(
    "subsquid's EvmBatchProcessor at 1 confirmation gets every log exactly once, its store holding each once",
    async () => {
      const tally = await tallyOf("subsquid");
      expect(tally).toMatchObject(exactlyTheChain(tally));
      expect((await indexerScene).squidDuplicates).toBe(0);
    },
    SCENE_MS,
  );

  it(
    "no indexer meets an error it cannot retry past (viem's retry rule; subsquid does not crash)",
    async () => {
      const { tallies, squidCrashes } = await indexerScene;
      const fatal = [...tallies.values()].map((tally) => [
        tally.indexer,
        tally.errors.fatal,
        tally.errors.first,
      ]);
      expect(fatal).toEqual(fatal.map(([indexer, , first]) => [indexer, 0, first]));
      expect(squidCrashes).toEqual([]);
    },
    SCENE_MS,
  );
});

describe("a latest that is the chain's, on the default 15 s checks", () => {
  it(
    "every scene ran to its end (so a failing promise below is the gateway's, not the scene's)",
    async () => {
      const [dapp, filter, restart] = await Promise.all([heads.dapp, heads.filter, heads.restart]);
      expect(dapp.reads + dapp.failures.length).toBeGreaterThanOrEqual(DEPLOYS);
      expect(filter.reported + filter.failures.length).toBeGreaterThanOrEqual(FILTER_POKES);
      expect(restart.samples.length).toBeGreaterThan(0);
    },
    SCENE_MS,
  );

  it(
    `viem's deploy → wait → read succeeds ${DEPLOYS} times in a row, and the logs from the receipt's block to latest hold the new log`,
    async () => {
      const result = await heads.dapp;
      console.log(`[dapp flow] ${JSON.stringify(result)}`);
      expect(result).toEqual({ reads: DEPLOYS, ranges: DEPLOYS, failures: [] });
    },
    SCENE_MS,
  );

  it(
    "a filter from latest to latest reports the logs of the blocks mined after it",
    async () => {
      const result = await heads.filter;
      console.log(`[filter latest..latest] ${JSON.stringify(result)}`);
      expect(result).toEqual({ reported: FILTER_POKES, failures: [] });
    },
    SCENE_MS,
  );

  it(
    "a chain restarted 300 blocks lower under the same chain id is followed within a minute, the old chain never served after",
    async () => {
      const result = await heads.restart;
      console.log(
        `[restart] followed after ${result.followedAfterMs} ms; old answers after: ${result.oldAfterFollowing}\n${result.samples.filter((_, index) => index % 10 === 0).join("\n")}`,
      );
      expect(result.followedAfterMs).not.toBeNull();
      expect(result.followedAfterMs).toBeLessThanOrEqual(FOLLOW_WITHIN_MS);
      expect(result.oldAfterFollowing).toBe(0);
    },
    SCENE_MS,
  );

  it(
    "the served head's lag against the node's is measured (figures printed), every sample answered",
    async () => {
      const figures = await heads.lag;
      console.log(`[head lag, blocks behind the node] ${JSON.stringify(figures)}`);
      for (const measured of Object.values(figures)) {
        expect(measured).toMatchObject({ samples: 110, failed: 0, attestedBelowAnswer: 0 });
        expect(measured.p50).toBeGreaterThanOrEqual(0);
      }
    },
    SCENE_MS,
  );
});
