import { createPublicClient, type Hex, http, type PublicClient } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ConfigInput } from "../../../functions/core/config/config-schema.ts";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import {
  buildStateChain,
  type HistoryFront,
  REFUSALS,
  type Refusal,
  type StateChain,
  startHistoryFront,
} from "../../support/pruned-fronts.ts";

/**
 * Old-state reads on a mixed fleet (docs/behaviour.md §16), on real parts: one anvil chain of
 * 300 blocks whose state differs at every block, two fronts that behave as pruned full nodes
 * (state older than head − 64 refused in geth's, Nethermind's, Besu's and geth path-scheme's
 * words) and one archive front, behind the whole local stack (API Gateway emulator, the proxy
 * handler, dynalite, the monitor every second). The reads are viem's, compared with the node's
 * own answers. Networks: the archive a lower-priority primary, the archive a backup, no
 * archive, the monitor's probe on, and one shared by four containers over one DynamoDB.
 */

const BLOCKS = 300;
const KEEP = 64;
const CHAIN = 31337;

type Fronts = { full1: HistoryFront; full2: HistoryFront; archive: HistoryFront };

let node: AnvilNode;
let chain: StateChain;
let stack: LocalStack;
const others: LocalStack[] = [];
const fronts = new Map<string, Fronts>();
const figures: string[] = [];

const FULL1_WORDS = [REFUSALS.geth] as Refusal[];
const FULL2_WORDS = [REFUSALS.nethermind, REFUSALS.gethPathScheme, REFUSALS.besu] as Refusal[];

async function frontsFor(network: string, archive = true): Promise<Fronts> {
  const set = {
    full1: await startHistoryFront(node, KEEP, FULL1_WORDS),
    full2: await startHistoryFront(node, KEEP, FULL2_WORDS),
    archive: await startHistoryFront(node, archive ? null : KEEP),
  };
  fronts.set(network, set);
  return set;
}

type ProviderInput = ConfigInput["networks"][string]["providers"][number];

function networkConfig(providers: ProviderInput[], probe = false) {
  return {
    chain_id: CHAIN,
    block_time_seconds: 1,
    state_cache_ms: 250,
    ...(probe ? {} : { history_bounds: { probe_seconds: 0 } }),
    providers,
  };
}

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN });
  chain = await buildStateChain(node, BLOCKS);
  const primary = await frontsFor("primary");
  const backup = await frontsFor("backup");
  const fulls = await frontsFor("fulls", false);
  const probed = await frontsFor("probed");
  const shared = await frontsFor("shared");
  const mixed = (set: Fronts) => [
    { name: "full1", url: set.full1.url, priority: 3 },
    { name: "full2", url: set.full2.url, priority: 2 },
    { name: "archive", url: set.archive.url, priority: 1 },
  ];
  stack = await startLocalStack({
    monitor: true,
    config: {
      check_interval_seconds: 1,
      networks: {
        primary: networkConfig(mixed(primary)),
        backup: networkConfig([
          { name: "full1", url: backup.full1.url, priority: 2 },
          { name: "full2", url: backup.full2.url, priority: 2 },
          { name: "archive", url: backup.archive.url, backup: true },
        ]),
        fulls: networkConfig([
          { name: "full1", url: fulls.full1.url, priority: 2 },
          { name: "full2", url: fulls.full2.url, priority: 1 },
        ]),
        probed: networkConfig(mixed(probed), true),
        shared: networkConfig(mixed(shared)),
      },
    },
  });
  // Three more containers over the same DynamoDB, each with its own state cache.
  for (let i = 0; i < 3; i++) {
    others.push(
      await startLocalStack({ config: stack.configPath, dynamodb: stack.dynamo.endpoint }),
    );
  }
  await servedHeadOf("primary");
}, 90_000);

afterAll(async () => {
  if (figures.length > 0) console.info(`old-state reads (§16):\n  ${figures.join("\n  ")}`);
  for (const other of others) await other.close();
  await stack?.close();
  for (const set of fronts.values()) {
    await Promise.all([set.full1.close(), set.full2.close(), set.archive.close()]);
  }
  await node?.stop();
});

interface Seen {
  provider: string | null;
  attempts: number;
  requests: number;
}

/** viem as an indexer uses it, recording the gateway's headers of each request it sends. */
function client(url: string): { viem: PublicClient; last: () => Seen; reset: () => void } {
  let seen: Seen = { provider: null, attempts: 0, requests: 0 };
  const viem = createPublicClient({
    transport: http(url, {
      batch: false,
      onFetchResponse: (response) => {
        seen = {
          provider: response.headers.get("x-gateway-provider"),
          attempts: Number(response.headers.get("x-gateway-attempts") ?? 0),
          requests: seen.requests + 1,
        };
      },
    }),
  });
  return {
    viem,
    last: () => seen,
    reset: () => {
      seen = { provider: null, attempts: 0, requests: 0 };
    },
  };
}

async function servedHeadOf(network: string): Promise<number> {
  for (let wait = 0; wait < 150; wait++) {
    const status = (await fetch(`${stack.url}/${network}/status`).then((r) => r.json())) as {
      served_head: { served: number | null };
    };
    if (status.served_head.served !== null) return status.served_head.served;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${network}: no served head`);
}

const hex = (n: number) => `0x${n.toString(16)}` as Hex;

/** One old-state read of each kind an indexer makes, and the node's own answer to it. */
const READS: ReadonlyArray<{
  readonly name: string;
  readonly viem: (viem: PublicClient, block: bigint) => Promise<unknown>;
  readonly node: (block: Hex) => Promise<unknown>;
}> = [
  {
    name: "getBalance",
    viem: (viem, blockNumber) => viem.getBalance({ address: chain.account as Hex, blockNumber }),
    node: async (block) => BigInt(await node.rpc<string>("eth_getBalance", [chain.account, block])),
  },
  {
    name: "call",
    viem: async (viem, blockNumber) =>
      (await viem.call({ to: chain.contract as Hex, blockNumber })).data,
    node: (block) => node.rpc("eth_call", [{ to: chain.contract }, block]),
  },
  {
    name: "getStorageAt",
    viem: (viem, blockNumber) =>
      viem.getStorageAt({ address: chain.contract as Hex, slot: "0x0", blockNumber }),
    node: (block) => node.rpc("eth_getStorageAt", [chain.contract, "0x0", block]),
  },
  {
    name: "getTransactionCount",
    viem: (viem, blockNumber) =>
      viem.getTransactionCount({ address: chain.account as Hex, blockNumber }),
    node: async (block) =>
      Number(await node.rpc<string>("eth_getTransactionCount", [chain.account, block])),
  },
];

/** Old blocks an indexer walks upward: from block 2 to well below the full nodes' window. */
const OLD_BLOCKS = Array.from({ length: 20 }, (_, i) => 2 + i * 11);

/** Reads every old block in turn (each kind in turn); the answers and the gateway's headers. */
async function walkOldBlocks(url: string, network: string) {
  const { viem, last } = client(`${url}/${network}`);
  const set = fronts.get(network) as Fronts;
  const served: Array<{ block: number; seen: Seen; fullReads: number }> = [];
  for (const [i, block] of OLD_BLOCKS.entries()) {
    const read = READS[i % READS.length] as (typeof READS)[number];
    const before = set.full1.stateReads() + set.full2.stateReads();
    const got = await read.viem(viem, BigInt(block));
    expect(got, `${read.name} at ${block}`).toEqual(await read.node(hex(block)));
    served.push({
      block,
      seen: last(),
      fullReads: set.full1.stateReads() + set.full2.stateReads() - before,
    });
  }
  return served;
}

/**
 * Recent reads (latest, and blocks within 16 of the head), each equal to the node's: how many
 * reached a provider (the others were answered from the cache), and how many a full node.
 */
async function recentReads(network: string): Promise<{ reads: number; onFulls: number }> {
  const { viem, last } = client(`${stack.url}/${network}`);
  const set = fronts.get(network) as Fronts;
  const before = {
    full: set.full1.stateReads() + set.full2.stateReads(),
    archive: set.archive.stateReads(),
  };
  const head = Number(await node.rpc<string>("eth_blockNumber"));
  const balanceAt = async (block: string) =>
    BigInt(await node.rpc<string>("eth_getBalance", [chain.account, block]));
  for (let i = 0; i < 20; i++) {
    const block = i % 2 === 0 ? null : head - (i % 16);
    const got = await viem.getBalance({
      address: chain.account as Hex,
      ...(block === null ? {} : { blockNumber: BigInt(block) }),
    });
    expect(got).toBe(await balanceAt(block === null ? "latest" : hex(block)));
    expect(last().provider ?? "", `recent read ${i}`).not.toBe("archive");
  }
  const onFulls = set.full1.stateReads() + set.full2.stateReads() - before.full;
  return { reads: onFulls + set.archive.stateReads() - before.archive, onFulls };
}

async function noStrikes(network: string): Promise<void> {
  const state = await stack.store.readNetwork(network);
  for (const [name, health] of state.providers) {
    expect(health.strikes, `${network}/${name}`).toBe(0);
    expect(health.blacklistedUntil, `${network}/${name}`).toBe(0);
  }
  expect(state.capabilities.size).toBe(0);
}

describe("old-state reads on a mixed fleet (docs/behaviour.md §16)", () => {
  it("the archive a lower-priority primary: every old read served and equal to the node's; after the first refusal per full node, one attempt each; recent reads on the full nodes; no strike", async () => {
    const walk = await walkOldBlocks(stack.url, "primary");
    const [first, ...rest] = walk;
    // The first old read: both full nodes refuse it (no penalty), the archive serves it.
    expect(first?.seen).toMatchObject({ provider: "archive", attempts: 3, requests: 1 });
    for (const { block, seen, fullReads } of rest) {
      expect({ block, ...seen, fullReads }).toEqual({
        block,
        provider: "archive",
        attempts: 1,
        requests: seen.requests,
        fullReads: 0,
      });
    }
    figures.push(
      `archive a primary: the first old read cost ${1 + (first?.fullReads ?? 0)} upstream calls, each of the next ${rest.length} cost 1`,
    );
    const recent = await recentReads("primary");
    expect(recent.onFulls / recent.reads).toBeGreaterThanOrEqual(0.95);
    await noStrikes("primary");
    const status = (await fetch(`${stack.url}/primary/status`).then((r) => r.json())) as {
      providers: Array<{
        name: string;
        history: { bounds: { state: { source: string | null; from: number | null } } };
      }>;
    };
    const full1 = status.providers.find((provider) => provider.name === "full1");
    expect(full1?.history.bounds.state).toMatchObject({ source: "learned", from: 3 });
  });

  it("the archive a backup: it serves each old read while the primaries are healthy, in one attempt after the first", async () => {
    const walk = await walkOldBlocks(stack.url, "backup");
    expect(walk[0]?.seen).toMatchObject({ provider: "archive", attempts: 3 });
    expect(
      walk.slice(1).every(({ seen }) => seen.provider === "archive" && seen.attempts === 1),
    ).toBe(true);
    expect(walk.slice(1).reduce((sum, { fullReads }) => sum + fullReads, 0)).toBe(0);
    const recent = await recentReads("backup");
    expect(recent.onFulls / recent.reads).toBeGreaterThanOrEqual(0.95);
    await noStrikes("backup");
    figures.push(
      `archive a backup: the first old read cost ${1 + (walk[0]?.fullReads ?? 0)} upstream calls, each of the next ${walk.length - 1} cost 1`,
    );
  });

  it("no archive: one clear error naming the block and the resource, not retried by viem, and no upstream asked again for it", async () => {
    const set = fronts.get("fulls") as Fronts;
    const { viem, last, reset } = client(`${stack.url}/fulls`);
    const read = () => viem.getBalance({ address: chain.account as Hex, blockNumber: 100n });
    const error = await read().catch((caught: unknown) => caught);
    expect(last().requests).toBe(1);
    const cause = (error as { cause?: { code?: number; details?: string } }).cause;
    expect(cause?.code).toBe(-32000);
    // Where the full nodes' state starts is not known yet (no probe here): no oldest block named.
    expect(cause?.details).toBe("state at block 0x64 is not available on any provider of fulls");
    const asked = set.full1.calls() + set.full2.calls();
    figures.push(
      `no archive: the first read of a block nobody keeps cost ${set.full1.stateReads() + set.full2.stateReads()} upstream calls, the next 0`,
    );
    reset();
    for (let i = 0; i < 5; i++) await read().catch(() => undefined);
    expect(last().requests).toBe(5);
    // Only the monitor's own head checks reached the fronts meanwhile.
    expect(set.full1.stateReads() + set.full2.stateReads()).toBe(2);
    expect(set.full1.calls() + set.full2.calls()).toBeGreaterThanOrEqual(asked);
    expect(await viem.getBalance({ address: chain.account as Hex })).toBe(
      BigInt(await node.rpc<string>("eth_getBalance", [chain.account, "latest"])),
    );
    await noStrikes("fulls");
  });

  it("the monitor's probe finds where each full node's state starts before any traffic: every old read reaches the archive in one attempt, reads in the full nodes' window stay on them", async () => {
    const set = fronts.get("probed") as Fronts;
    const found = async () => {
      const status = (await fetch(`${stack.url}/probed/status`).then((r) => r.json())) as {
        providers: Array<{
          name: string;
          history: { bounds: { state: { from: number | null; asked_last_below: number | null } } };
        }>;
      };
      return status.providers.filter(
        (provider) =>
          provider.name.startsWith("full") &&
          (provider.history.bounds.state.from ?? 0) > BLOCKS - KEEP - 32 &&
          provider.history.bounds.state.asked_last_below === null,
      ).length;
    };
    for (let wait = 0; wait < 100 && (await found()) < 2; wait++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await found()).toBe(2);
    const probeReads = set.full1.stateReads() + set.full2.stateReads();
    const walk = await walkOldBlocks(stack.url, "probed");
    expect(walk.every(({ seen }) => seen.provider === "archive" && seen.attempts === 1)).toBe(true);
    expect(set.full1.stateReads() + set.full2.stateReads()).toBe(probeReads);
    const { viem, last } = client(`${stack.url}/probed`);
    const head = Number(await node.rpc<string>("eth_blockNumber"));
    await viem.getBalance({ address: chain.account as Hex, blockNumber: BigInt(head - 45) });
    expect(last().provider).toMatch(/^full/);
    figures.push(
      `probe on: every old read cost 1 upstream call from the first; the probe cost ${probeReads} state reads for two full nodes`,
    );
    await noStrikes("probed");
  });

  it("four containers over one DynamoDB: a bound one container learned is used by the others", async () => {
    const set = fronts.get("shared") as Fronts;
    const containers = [stack, ...others];
    const head = Number(await node.rpc<string>("eth_blockNumber"));
    // Every container has read the network's state before anything is learned.
    for (const container of containers) {
      await client(`${container.url}/shared`).viem.getBalance({
        address: chain.account as Hex,
        blockNumber: BigInt(head),
      });
    }
    const learner = client(`${stack.url}/shared`);
    await learner.viem.getBalance({ address: chain.account as Hex, blockNumber: 10n });
    expect(learner.last()).toMatchObject({ provider: "archive", attempts: 3 });
    // Past state_cache_ms, each container reads the shared state again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    for (const container of others) {
      await client(`${container.url}/shared`).viem.getBalance({ address: chain.account as Hex });
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
    const before = set.full1.stateReads() + set.full2.stateReads();
    for (const [i, container] of others.entries()) {
      const { viem, last } = client(`${container.url}/shared`);
      const block = 20 + i * 50;
      expect(
        await viem.getBalance({ address: chain.account as Hex, blockNumber: BigInt(block) }),
      ).toBe(BigInt(await node.rpc<string>("eth_getBalance", [chain.account, hex(block)])));
      expect(last(), `container ${i + 2}`).toMatchObject({ provider: "archive", attempts: 1 });
    }
    expect(set.full1.stateReads() + set.full2.stateReads()).toBe(before);
    await noStrikes("shared");
  });
});
