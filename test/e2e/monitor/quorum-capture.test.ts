import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publicationDelayMs } from "../../../functions/core/chain/chain-head.ts";
import { type AnvilNode, JsonRpcCallError, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { startLyingFront } from "../../support/lying-front.ts";
import { statusReader } from "../../support/status-after-tick.ts";

/**
 * One provider claiming a head far ahead of the others must not capture the quorum, on real
 * parts: anvil nodes, the local stack with its monitor, and a lying provider (a small HTTP
 * server in front of an anvil node that answers the head `lead` blocks higher than it is).
 */

process.env.POWERTOOLS_LOG_LEVEL = "CRITICAL";

/** Beyond the default `quorum.max_ahead_blocks` (500). */
const LEAD = 1_000;

interface Liar {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Forwards to `node`, except the head: `eth_blockNumber` and `eth_getBlockByNumber("latest")`
 * answer `lead` blocks higher, stamped `secondsAhead` from now, or with the node's own block
 * timestamp ("level": as current as the honest nodes', which mine alongside).
 */
async function startLiar(
  node: AnvilNode,
  secondsAhead: number | "level",
  lead = LEAD,
): Promise<Liar> {
  const server: Server = createServer((request, response) => {
    let raw = "";
    request.on("data", (chunk: Buffer) => {
      raw += chunk.toString();
    });
    request.on("end", async () => {
      type Call = { id: unknown; method: string; params: unknown[] };
      const parsed = JSON.parse(raw) as Call | Call[];
      // The monitor's head check sends a batch: each call answered as a lone one would be.
      const answers = await Promise.all(
        (Array.isArray(parsed) ? parsed : [parsed]).map((call) =>
          answer(call).catch((error: unknown) => ({
            jsonrpc: "2.0",
            id: call.id,
            error: {
              code: error instanceof JsonRpcCallError ? error.code : -32603,
              message: error instanceof JsonRpcCallError ? error.rpcMessage : String(error),
            },
          })),
        ),
      );
      response
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify(Array.isArray(parsed) ? answers : answers[0]));
    });
  });

  async function answer(call: { id: unknown; method: string; params: unknown[] }) {
    let result: unknown;
    if (call.method === "eth_blockNumber") {
      result = `0x${(Number(await node.rpc("eth_blockNumber")) + lead).toString(16)}`;
    } else if (call.method === "eth_getBlockByNumber" && call.params[0] === "latest") {
      const block = (await node.rpc("eth_getBlockByNumber", ["latest", false])) as Record<
        string,
        string
      >;
      const timestamp =
        secondsAhead === "level"
          ? Number(block.timestamp)
          : Math.floor(Date.now() / 1000) + secondsAhead;
      result = {
        ...block,
        number: `0x${(Number(block.number) + lead).toString(16)}`,
        timestamp: `0x${timestamp.toString(16)}`,
      };
    } else {
      result = await node.rpc(call.method, call.params);
    }
    return { jsonrpc: "2.0", id: call.id, result };
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

interface Status {
  quorum: { head: number | null; members: string[] };
  served_head: {
    latest: number | null;
    served: number | null;
    finalized: number | null;
    finality_broken_at: string | null;
  };
  monitor: { last_tick_at: string | null };
  events: Array<{ provider: string | null; kind: string; reason: string; detail: string }>;
  active_provider: string | null;
  providers: Array<{
    name: string;
    in_quorum: boolean;
    quorum_reason: string | null;
    strikes: number;
    blacklist: unknown;
  }>;
}

/**
 * With `head_cache_ms: 0`, the served head's publication delay: a tick publishes the head only
 * this long after the publication before it, and eth_blockNumber answers a publication (never a
 * provider's number above it) until it is this old.
 */
const PUBLICATION_DELAY_MS = publicationDelayMs(0);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let nodes: AnvilNode[] = [];
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  nodes = await Promise.all([0, 1, 2].map(() => startAnvil({ chainId: 31337 })));
  await Promise.all(nodes.map((node) => node.rpc("anvil_mine", ["0x20"])));
}, 60_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await Promise.all(nodes.map((node) => node.stop()));
});

async function gateway(
  providers: Array<{ name: string; url: string; priority?: number }>,
): Promise<LocalStack & { tick(): Promise<Status>; status(): Promise<Status> }> {
  const stack = await startLocalStack({
    monitor: true,
    writeMetrics: () => undefined,
    config: {
      // The timer ticks once at start; the test ticks after that.
      check_interval_seconds: 3600,
      // The status route reads the state the monitor just wrote, and each request the head.
      state_cache_ms: 0,
      head_cache_ms: 0,
      // The anvil nodes are separate chains that mine the same blocks only while nothing sets them
      // apart: the fork check would exclude some as wrong_fork. Forks are tested in fork-check.test.ts.
      networks: { devnet: { chain_id: 31337, providers, quorum: { fork_check: false } } },
    },
  });
  cleanups.push(() => stack.close());
  const { status, statusAfter, statusSettled } = statusReader<Status>(stack.url, "devnet");
  // The start-up tick comes first; the test's ticks come after it.
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

function node(index: number): AnvilNode {
  const found = nodes[index];
  if (!found) throw new Error(`no anvil node ${index}`);
  return found;
}

async function rpc(url: string, method: string, params: unknown[]) {
  const response = await fetch(`${url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  return {
    body: (await response.json()) as { result?: unknown; error?: unknown },
    provider: response.headers.get("x-gateway-provider"),
  };
}

describe("two providers, one 1,000 blocks ahead with future timestamps", () => {
  it("regression: the liar won the tie and callers got its blocks; now it is ahead and the honest head is the quorum", async () => {
    const liar = await startLiar(node(1), 3_600);
    cleanups.push(() => liar.close());
    const honestHead = Number(await node(0).rpc("eth_blockNumber"));
    const stack = await gateway([
      { name: "honest", url: node(0).url, priority: 1 },
      { name: "liar", url: liar.url, priority: 2 },
    ]);

    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["honest"]);
    expect(status.quorum.head).toBe(honestHead);
    expect(status.providers.find((p) => p.name === "liar")?.quorum_reason).toBe("ahead");
    // The liar is preferred by priority, but out of quorum: callers get the honest chain, from
    // the served head (eth_blockNumber) and from the honest provider (the latest block).
    const head = await rpc(stack.url, "eth_blockNumber", []);
    expect(Number(head.body.result)).toBe(honestHead);
    const answer = await rpc(stack.url, "eth_getBlockByNumber", ["latest", false]);
    expect(answer.provider).toBe("honest");
    expect(Number((answer.body.result as { number: string }).number)).toBeGreaterThanOrEqual(
      honestHead,
    );
  });
});

describe("three providers, one 1,000 blocks beyond the others with a current timestamp", () => {
  it("regression: the far-ahead provider stayed a member; now it is excluded as ahead", async () => {
    const liar = await startLiar(node(2), 0);
    cleanups.push(() => liar.close());
    const stack = await gateway([
      { name: "a", url: node(0).url, priority: 1 },
      { name: "b", url: node(1).url, priority: 1 },
      { name: "liar", url: liar.url, priority: 2 },
    ]);

    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["a", "b"]);
    expect(status.providers.find((p) => p.name === "liar")).toMatchObject({
      in_quorum: false,
      quorum_reason: "ahead",
    });
    const latest = await rpc(stack.url, "eth_getBlockByNumber", ["latest", false]);
    expect(["a", "b"]).toContain(latest.provider);
  });
});

describe("two providers, one 1,000 blocks ahead with a current timestamp", () => {
  let stack: Awaited<ReturnType<typeof gateway>>;
  let honestHead: number;

  beforeAll(async () => {
    const liar = await startLiar(node(1), "level");
    cleanups.push(() => liar.close());
    honestHead = Number(await node(0).rpc("eth_blockNumber"));
    // Preferred by priority: while it is in quorum, reads go to it.
    stack = await gateway([
      { name: "honest", url: node(0).url, priority: 2 },
      { name: "liar", url: liar.url, priority: 1 },
    ]);
    await stack.tick();
  });

  it("regression: the liar won the tie, its number became the chain position's latest and eth_blockNumber froze at it; now it is out as ahead and the honest head is latest", async () => {
    const status = await stack.status();
    expect(status.quorum.members).toEqual(["honest"]);
    expect(status.quorum.head).toBe(honestHead);
    expect(status.served_head.latest).toBe(honestHead);
    expect(status.providers.find((p) => p.name === "liar")).toMatchObject({
      in_quorum: false,
      quorum_reason: "ahead",
    });
    const head = await rpc(stack.url, "eth_blockNumber", []);
    expect(Number(head.body.result)).toBe(honestHead);
    const latest = await rpc(stack.url, "eth_getBlockByNumber", ["latest", false]);
    expect(latest.provider).toBe("honest");
    expect(Number((latest.body.result as { number: string }).number)).toBe(honestHead);
  });

  it("the exclusion is an event like any other ahead, its detail saying how many blocks above", async () => {
    const { events } = await stack.status();
    expect(events).toContainEqual(
      expect.objectContaining({ provider: "liar", kind: "quorum_excluded", reason: "ahead" }),
    );
    const excluded = events.find((event) => event.provider === "liar");
    expect(excluded?.detail).toBe(
      `head ${honestHead + LEAD}, ${LEAD} blocks above the quorum head ${honestHead}, timestamp level`,
    );
  });

  it("the chain moving on moves the head on, and the liar stays out", async () => {
    await Promise.all([0, 1].map((index) => node(index).rpc("anvil_mine", ["0x3"])));
    await pause(PUBLICATION_DELAY_MS);
    const status = await stack.tick();
    expect(status.quorum.members).toEqual(["honest"]);
    expect(status.served_head.latest).toBe(honestHead + 3);
    await pause(PUBLICATION_DELAY_MS);
    const head = await rpc(stack.url, "eth_blockNumber", []);
    expect(Number(head.body.result)).toBe(honestHead + 3);
  });
});

describe("two providers, one 100 blocks ahead (within max_ahead_blocks) with a current timestamp", () => {
  const lead = 100;
  let stack: Awaited<ReturnType<typeof gateway>>;
  let honestHead: number;

  beforeAll(async () => {
    const liar = await startLiar(node(1), "level", lead);
    cleanups.push(() => liar.close());
    honestHead = Number(await node(0).rpc("eth_blockNumber"));
    // The lying front forwards to a node level with the honest one.
    expect(Number(await node(1).rpc("eth_blockNumber"))).toBe(honestHead);
    stack = await gateway([
      { name: "honest", url: node(0).url, priority: 2 },
      { name: "liar", url: liar.url, priority: 1 },
    ]);
    await stack.tick();
  });

  it("both stay members and the quorum head is the higher one (no more than max_ahead_blocks: not told apart from a faster provider)", async () => {
    const status = await stack.status();
    expect(status.quorum.members).toEqual(["honest", "liar"]);
    expect(status.quorum.head).toBe(honestHead + lead);
  });

  // The liar's front forwards a call for its claimed head block to a node that does not have it.
  it("regression: nobody showed the block at the quorum head, so the chain position was never written; now it is the highest head a member shows", async () => {
    const status = await stack.status();
    expect(status.served_head.latest).toBe(honestHead);
    await Promise.all([node(0).rpc("anvil_mine", ["0x3"]), node(1).rpc("anvil_mine", ["0x3"])]);
    await pause(PUBLICATION_DELAY_MS);
    const after = await stack.tick();
    expect(after.quorum.head).toBe(honestHead + 3 + lead);
    expect(after.served_head.latest).toBe(honestHead + 3);
    await pause(PUBLICATION_DELAY_MS);
    expect((await rpc(stack.url, "eth_blockNumber", [])).body.result).toBe(
      `0x${(honestHead + 3).toString(16)}`,
    );
  });

  it("before any request: the honest node itself answers null for a block above its head, and has no strike", async () => {
    expect(
      await node(0).rpc("eth_getBlockByNumber", [`0x${(honestHead + 5).toString(16)}`, false]),
    ).toBeNull();
    const honest = (await stack.status()).providers.find((provider) => provider.name === "honest");
    expect(honest).toMatchObject({ strikes: 0, blacklist: null });
  });

  // The liar set the quorum head, so the honest provider's null looks stale; but both answer
  // null for that block, so the call is suspect and nobody is penalised.
  it("regression: a null from the honest provider for a block above its own head was a strike", async () => {
    await rpc(stack.url, "eth_getBlockByNumber", [`0x${(honestHead + 5).toString(16)}`, false]);
    const honest = (await stack.status()).providers.find((provider) => provider.name === "honest");
    expect(honest).toMatchObject({ strikes: 0, blacklist: null });
  });
});

describe("two providers, one 1,000 blocks ahead with a timestamp just inside the future bound", () => {
  it("regression: against an honest head whose block was 10 s old, the liar's timestamp of now + max_lag_seconds counted as 70 s later: it became the quorum head and the honest one was out as behind; now the liar is out as ahead and the honest head is the quorum's and eth_blockNumber's", async () => {
    // A chain's latest block is seconds old when it is read (6 s on average on a 12 s chain).
    const honest = await startLiar(node(0), -10, 0);
    const liar = await startLiar(node(1), 60);
    cleanups.push(
      () => honest.close(),
      () => liar.close(),
    );
    const honestHead = Number(await node(0).rpc("eth_blockNumber"));
    const stack = await gateway([
      { name: "honest", url: honest.url, priority: 2 },
      { name: "liar", url: liar.url, priority: 1 },
    ]);

    const status = await stack.tick();

    expect(status.quorum.members).toEqual(["honest"]);
    expect(status.quorum.head).toBe(honestHead);
    expect(status.served_head.latest).toBe(honestHead);
    expect(status.providers.find((p) => p.name === "liar")?.quorum_reason).toBe("ahead");
    expect(Number((await rpc(stack.url, "eth_blockNumber", [])).body.result)).toBe(honestHead);
  });
});

/** How a front over an honest node misbehaves; the test changes it between ticks. */
interface FrontBehaviour {
  /** Claims its head this many blocks below the node's. */
  below: number;
  /** Answers null for its own head block asked by number (a node behind a balancer). */
  hideHead: boolean;
  /** Answers every block asked by number with a made-up hash. */
  fakeHashes: boolean;
}

async function startFront(node: AnvilNode, behaviour: FrontBehaviour): Promise<Liar> {
  return startLyingFront(node.url, async (call, forward) => {
    const head = Number(await node.rpc("eth_blockNumber")) - behaviour.below;
    const [tag, full] = Array.isArray(call.params) ? call.params : [];
    if (call.method === "eth_blockNumber") return { result: `0x${head.toString(16)}` };
    if (call.method !== "eth_getBlockByNumber") return forward();
    const asked =
      tag === "latest"
        ? head
        : typeof tag === "string" && tag.startsWith("0x")
          ? Number(tag)
          : null;
    if (asked === null) return forward();
    if (tag !== "latest" && (asked > head || (behaviour.hideHead && asked === head))) {
      return { result: null };
    }
    const block = (await node.rpc("eth_getBlockByNumber", [
      `0x${asked.toString(16)}`,
      full,
    ])) as Record<string, unknown>;
    return {
      result:
        tag !== "latest" && behaviour.fakeHashes
          ? { ...block, hash: `0x${"dead".repeat(15)}${asked.toString(16).padStart(4, "0")}` }
          : block,
    };
  });
}

describe("two fronts over one node: the one at the head stops showing its head block, the one two blocks below starts lying about hashes", () => {
  const front: FrontBehaviour = { below: 0, hideHead: false, fakeHashes: false };
  const low: FrontBehaviour = { below: 2, hideHead: false, fakeHashes: false };
  let stack: Awaited<ReturnType<typeof gateway>>;

  beforeAll(async () => {
    const [atHead, below] = await Promise.all([
      startFront(node(2), front),
      startFront(node(2), low),
    ]);
    cleanups.push(
      () => atHead.close(),
      () => below.close(),
    );
    stack = await gateway([
      { name: "front", url: atHead.url, priority: 2 },
      { name: "low", url: below.url, priority: 1 },
    ]);
  });

  it("while the front shows its head block, the chain position is read from it", async () => {
    const status = await stack.tick();
    expect(status.quorum.members).toEqual(["front", "low"]);
    expect(status.served_head.latest).toBe(Number(await node(2).rpc("eth_blockNumber")));
  });

  // The lower member is the only provider at the height read; the front at the quorum head
  // still shows the recorded finalized block and is asked to confirm.
  it("regression: the lower member read instead broke finality alone; now a member at the quorum head must confirm it", async () => {
    front.hideHead = true;
    low.fakeHashes = true;
    await node(2).rpc("anvil_mine", ["0x3"]);
    const status = await stack.tick();
    expect(status.served_head.finality_broken_at).toBeNull();
  });

  // anvil's finalized block is 64 below its head: a reorg deeper than that replaces it.
  it("a real finality break seen by the lower member is confirmed by the front at the quorum head", async () => {
    low.fakeHashes = false;
    await node(2).rpc("anvil_mine", ["0x50"]);
    const before = await stack.tick();
    expect(before.served_head.finality_broken_at).toBeNull();
    const head = Number(await node(2).rpc("eth_blockNumber"));
    expect(before.served_head.finalized).toBeGreaterThan(0);
    await node(2).rpc("anvil_reorg", [head - (before.served_head.finalized ?? 0) + 1, []]);
    const after = await stack.tick();
    expect(after.served_head.finality_broken_at).not.toBeNull();
  });
});

describe("a provider that calls its own head finalized (two fronts over one node)", () => {
  let chain: AnvilNode;
  let stack: Awaited<ReturnType<typeof gateway>>;

  beforeAll(async () => {
    chain = await startAnvil({ chainId: 31337 });
    cleanups.push(() => chain.stop());
    // anvil's finalized block is 64 below its head, its safe block 32 below.
    await chain.rpc("anvil_mine", ["0x64"]);
    const claimsHeadFinal = await startLyingFront(chain.url, async (call, forward) => {
      const [tag, full] = Array.isArray(call.params) ? call.params : [];
      if (call.method === "eth_getBlockByNumber" && (tag === "finalized" || tag === "safe")) {
        return { result: await chain.rpc("eth_getBlockByNumber", ["latest", full]) };
      }
      return forward();
    });
    const honest = await startLyingFront(chain.url, (_call, forward) => forward());
    cleanups.push(
      () => claimsHeadFinal.close(),
      () => honest.close(),
    );
    stack = await gateway([
      { name: "claims-head-final", url: claimsHeadFinal.url, priority: 2 },
      { name: "honest", url: honest.url, priority: 1 },
    ]);
  });

  it("regression: its finalized block (its head) became the chain position's, so answers near the head were kept as immutable; now finality goes only as far as a second provider confirms", async () => {
    const status = await stack.tick();
    const head = Number(await chain.rpc("eth_blockNumber"));
    expect(status.served_head.latest).toBe(head);
    expect(status.served_head.finalized).toBe(head - 64);
  });

  it("regression: an ordinary one-block reorg at the head then broke that 'finality', confirmed by the honest provider, and reset the chain position and every cache; now nothing breaks", async () => {
    await stack.tick();
    await chain.rpc("anvil_reorg", [1, []]);
    const status = await stack.tick();
    expect(status.served_head.finality_broken_at).toBeNull();
    expect(status.events.filter((event) => event.kind === "chain_reset")).toEqual([]);
  });
});
