import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { startForkedPair } from "../../support/forked-anvils.ts";
import { type NodeFront, startNodeFront } from "../../support/lying-front.ts";
import { statusReader } from "../../support/status-after-tick.ts";

/**
 * A provider on another fork of the same chain id leaves the quorum, on real parts: two anvil
 * nodes with the same chain id and their own histories (the forked one's first block holds a
 * transfer the other's does not: a real fork from block 1), the local stack with its monitor ticked by the test,
 * and HTTP fronts that switch a provider from one node to the other or lie about old blocks (or
 * answer a "hash" that is no hash). Fixed bugs are "regression: …".
 */

process.env.POWERTOOLS_LOG_LEVEL = "CRITICAL";

const CHAIN_ID = 31337;
/** anvil's `finalized` is 64 blocks behind its head: 100 blocks give a finalized block 36. */
const BLOCKS = 100;
const hex = (n: number) => `0x${n.toString(16)}`;

type Front = NodeFront & { target: AnvilNode };

interface Status {
  monitor: { last_tick_at: string | null };
  quorum: { head: number | null; members: string[] };
  served_head: { finalized: number | null; finality_broken_at: string | null };
  providers: Array<{
    name: string;
    in_quorum: boolean;
    quorum_reason: string | null;
    quorum_detail: string | null;
  }>;
  events: Array<{ provider: string | null; kind: string; reason: string; detail: string }>;
}

let honest: AnvilNode;
let forked: AnvilNode;
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  ({ honest, forked } = await startForkedPair(CHAIN_ID, BLOCKS));
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await Promise.all([honest, forked].map((node) => node?.stop()));
});

/** `dynamodb`: the state of another stack, as a config change over the same table. */
async function gateway(
  providers: Array<{ name: string; url: string; priority?: number }>,
  forkCheck = true,
  dynamodb?: string,
): Promise<LocalStack & { tick(): Promise<Status>; status(): Promise<Status> }> {
  const stack = await startLocalStack({
    monitor: true,
    writeMetrics: () => undefined,
    ...(dynamodb === undefined ? {} : { dynamodb }),
    config: {
      // The timer ticks once at start; the test ticks after that.
      check_interval_seconds: 3600,
      // The status route reads the state the monitor just wrote.
      state_cache_ms: 0,
      networks: {
        devnet: { chain_id: CHAIN_ID, providers, quorum: { fork_check: forkCheck } },
      },
    },
  });
  cleanups.push(() => stack.close());
  const { status, statusAfter, statusSettled } = statusReader<Status>(stack.url, "devnet");
  // The start-up tick records the chain position; the test's ticks come after it.
  await statusSettled();
  return {
    ...stack,
    status,
    async tick() {
      const before = (await status()).monitor.last_tick_at;
      await stack.monitor?.monitor.tick();
      return statusAfter(before);
    },
  };
}

async function rpc(url: string, method: string, params: unknown[]) {
  const response = await fetch(`${url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    body: (await response.json()) as { result?: { hash?: string } | null; error?: unknown },
    provider: response.headers.get("x-gateway-provider"),
  };
}

async function hashAt(node: AnvilNode, height: number): Promise<string> {
  return (await node.rpc<{ hash: string }>("eth_getBlockByNumber", [hex(height), false])).hash;
}

const provider = (status: Status, name: string) =>
  status.providers.find((one) => one.name === name);

describe("a provider on another fork, its head level with the others", () => {
  let stack: Awaited<ReturnType<typeof gateway>>;
  let front: Front;

  beforeAll(async () => {
    // Preferred by priority: while it is in quorum, reads go to it.
    front = await startNodeFront(forked);
    cleanups.push(() => front.close());
    stack = await gateway([
      { name: "a", url: honest.url, priority: 1 },
      { name: "b", url: `${honest.url}/`, priority: 1 },
      { name: "f", url: front.url, priority: 2 },
    ]);
  });

  it("is out as wrong_fork at the first check that knows the finalized block, and reads go elsewhere", async () => {
    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["a", "b"]);
    const finalized = status.served_head.finalized;
    if (finalized === null) throw new Error("no finalized block recorded");
    expect(provider(status, "f")).toMatchObject({ in_quorum: false, quorum_reason: "wrong_fork" });
    expect(provider(status, "f")?.quorum_detail).toBe(
      `block ${finalized} is ${await hashAt(forked, finalized)}, not the recorded ${await hashAt(honest, finalized)}`,
    );
    expect(status.events).toContainEqual(
      expect.objectContaining({ provider: "f", kind: "quorum_excluded", reason: "wrong_fork" }),
    );
    expect(status.served_head.finality_broken_at).toBeNull();
    // A finalized block, an immutable answer: the honest chain's, from an honest provider.
    const answer = await rpc(stack.url, "eth_getBlockByNumber", [hex(finalized - 1), false]);
    expect(["a", "b"]).toContain(answer.provider);
    expect(answer.body.result?.hash).toBe(await hashAt(honest, finalized - 1));
  });

  it("stays out on later checks, and rejoins once it has shown the recorded block for failed_recently_checks (2) checks", async () => {
    expect(provider(await stack.tick(), "f")?.quorum_reason).toBe("wrong_fork");

    front.target = honest;
    // A provider flapping between forks must not be a member every other check.
    expect(provider(await stack.tick(), "f")?.quorum_reason).toBe("failed_recently");
    expect(provider(await stack.tick(), "f")?.quorum_reason).toBe("failed_recently");
    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["a", "b", "f"]);
    expect(status.events).toContainEqual(
      expect.objectContaining({
        provider: "f",
        kind: "quorum_rejoined",
        reason: "failed_recently",
      }),
    );
  });
});

describe("fork_check: false", () => {
  it("keeps a provider on another fork in quorum (providers knowingly on separate chains)", async () => {
    const stack = await gateway(
      [
        { name: "a", url: honest.url },
        { name: "b", url: `${honest.url}/` },
        { name: "f", url: forked.url },
      ],
      false,
    );
    const status = await stack.tick();
    expect(status.served_head.finalized).not.toBeNull();
    expect(status.quorum.members).toEqual(["a", "b", "f"]);
  });
});

describe("the chain position first read from the forked provider", () => {
  it("regression: the first finalized block recorded was the lone forked provider's, and it stayed; now its claim is checked against two others, the majority's block is recorded at once, and the forked one is out at the next check", async () => {
    const front = await startNodeFront(forked);
    cleanups.push(() => front.close());
    // Listed first: the start-up tick, with no finalized block recorded, reads it from f.
    const stack = await gateway([
      { name: "f", url: front.url, priority: 2 },
      { name: "a", url: honest.url, priority: 1 },
      { name: "b", url: `${honest.url}/`, priority: 1 },
    ]);
    const first = await stack.status();
    const height = first.served_head.finalized;
    if (height === null) throw new Error("no finalized block recorded");
    // f and a name two blocks at that height; b sides with a: the record is the majority's,
    // so nothing needs breaking.
    expect(first.served_head.finality_broken_at).toBeNull();

    const status = await stack.tick();
    expect(status.quorum.members).toEqual(["a", "b"]);
    expect(provider(status, "f")?.quorum_reason).toBe("wrong_fork");
    expect(status.served_head.finality_broken_at).toBeNull();
  });
});

describe("a provider that lies only about old blocks", () => {
  it("is out as wrong_fork: its head is the honest node's, its finalized blocks are not", async () => {
    const head = Number(await honest.rpc("eth_blockNumber"));
    const liar = await startNodeFront(honest, (call, result) => {
      const block = call.params[0];
      const old = typeof block === "string" && block.startsWith("0x") && Number(block) < head - 32;
      return call.method === "eth_getBlockByNumber" && old && result !== null
        ? { ...(result as object), hash: `0x${"ee".repeat(32)}` }
        : result;
    });
    cleanups.push(() => liar.close());
    const stack = await gateway([
      { name: "a", url: honest.url, priority: 1 },
      { name: "b", url: `${honest.url}/`, priority: 1 },
      { name: "liar", url: liar.url, priority: 2 },
    ]);

    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["a", "b"]);
    expect(provider(status, "liar")?.quorum_reason).toBe("wrong_fork");
  });
});

describe("a deep reorg of every node at once", () => {
  it("excludes nobody: the finality break is recorded and every provider stays a member", async () => {
    const node = await startAnvil({ chainId: CHAIN_ID });
    cleanups.push(() => node.stop());
    await node.rpc("anvil_mine", [hex(BLOCKS)]);
    const front = await startNodeFront(node);
    cleanups.push(() => front.close());
    const stack = await gateway([
      { name: "a", url: node.url },
      { name: "b", url: `${node.url}/` },
      { name: "c", url: front.url },
    ]);
    const before = await stack.status();
    expect(before.served_head.finalized).not.toBeNull();

    await node.rpc("anvil_reorg", [80, []]);
    const broken = await stack.tick();
    const after = await stack.tick();

    expect(broken.providers.map((one) => one.quorum_reason)).toEqual([null, null, null]);
    expect(broken.quorum.members).toEqual(["a", "b", "c"]);
    expect(broken.served_head.finality_broken_at).not.toBeNull();
    expect(after.quorum.members).toEqual(["a", "b", "c"]);
    expect(after.events.filter((event) => event.reason === "wrong_fork")).toEqual([]);
  });
});

describe("fork_check turned off", () => {
  it("regression: a provider out as wrong_fork stayed out for good once fork_check was set false; now it rejoins at the next check", async () => {
    const front = await startNodeFront(forked);
    cleanups.push(() => front.close());
    const providers = [
      { name: "a", url: honest.url },
      { name: "b", url: `${honest.url}/` },
      { name: "f", url: front.url },
    ];
    const checked = await gateway(providers);
    expect(provider(await checked.tick(), "f")?.quorum_reason).toBe("wrong_fork");

    // The same state, now served by a config with the check off (an operator's deliberate choice).
    const unchecked = await gateway(providers, false, checked.dynamo.endpoint);
    const status = await unchecked.tick();

    expect(provider(status, "f")?.quorum_reason).toBeNull();
    expect(status.quorum.members).toEqual(["a", "b", "f"]);
  });
});

describe("a provider answering a huge garbage hash at the finalized height", () => {
  it("regression: its whole 'hash' went into the published quorum detail; now a hash that is not 32 bytes of hex is no block, and nothing of it is published", async () => {
    const junk = `0x${"ab".repeat(200_000)}`;
    const liar = await startNodeFront(honest, (call, result) => {
      const block = call.params[0];
      const numbered = typeof block === "string" && /^0x[0-9a-f]+$/.test(block);
      return call.method === "eth_getBlockByNumber" && numbered && result !== null
        ? { ...(result as object), hash: junk }
        : result;
    });
    cleanups.push(() => liar.close());
    const stack = await gateway([
      { name: "a", url: honest.url },
      { name: "b", url: `${honest.url}/` },
      { name: "liar", url: liar.url },
    ]);

    const status = await stack.tick();

    expect(JSON.stringify(status)).not.toContain("abababab");
    expect(status.quorum.members).toEqual(["a", "b", "liar"]);
  });
});
