import { createPublicClient, type Hex, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { deployContract } from "../../support/deploy-contract.ts";
import { metricsNamed, parseEmf, valuesOf } from "../../support/emf.ts";
import { type FrontAnswer, type FrontCall, startLyingFront } from "../../support/lying-front.ts";

/**
 * Read consensus end to end (docs/behaviour.md §17): the local stack (the real handlers, two
 * containers over one DynamoDB API, the monitor off) on three fronts over one anvil chain. On `liars`, one front lies on a
 * share of its answers (a balance off by one wei, a log dropped from an eth_getLogs, a receipt's
 * status flipped); with consensus on, no wrong answer is served in over a thousand calls, the liar
 * collects `inconsistent` strikes and leaves consensus routing, the honest fronts never get one.
 * On `honest` (the same two honest fronts and a third, each with a fixed latency) consensus costs
 * about two upstream calls a call and adds at most the slower participant's latency; a revert one
 * front words as Nethermind does agrees with anvil's.
 */

const CHAIN_ID = 31337;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const DEV = [
  DEPLOYER,
  "0x70997970C51812dc3A010C7d01b50e0d17dc79C8",
  "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
  "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
];
/** Emits LOG1 with the calldata's first word as its topic; 9 bytes of runtime. */
const LOGGER_INIT: Hex = "0x6009600c60003960096000f360003560006000a100";
/** Reverts with the 4 bytes 0x08c379a0 as revert data; 13 bytes of runtime. */
const REVERTER_INIT: Hex = "0x600d600c600039600d6000f36308c379a06000526004601cfd";
const METHODS = ["eth_getBalance", "eth_getLogs", "eth_getTransactionReceipt", "eth_call"];
const hex = (n: number) => `0x${n.toString(16)}`;

let node: AnvilNode;
let stack: LocalStack;
let head = 0;
let logger = "";
let reverter = "";
const txs: string[] = [];
const metricLines: string[] = [];

interface Front {
  readonly url: string;
  /** HTTP requests this front received with a consensus method in them. */
  requests: number;
  close(): Promise<void>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A front over the node, answering after `delayMs`; `rewrite` may change a member's answer.
 */
async function front(
  delayMs: number,
  rewrite: (call: FrontCall, answer: FrontAnswer) => FrontAnswer = (_, answer) => answer,
): Promise<Front> {
  const counted = { requests: 0 };
  let last = -1;
  const lying = await startLyingFront(node.url, async (call, forward, request) => {
    // Head polls and log checks' headers are not what consensus is measured on.
    if (request.index !== last && METHODS.includes(call.method)) {
      last = request.index;
      counted.requests++;
    }
    if (delayMs > 0) await pause(delayMs);
    return rewrite(call, await forward());
  });
  return Object.assign(counted, lying);
}

/** Lies told by the liar. */
const lies = { told: 0 };

/** Lies on every fourth answer it can lie on. */
function liar(): (call: FrontCall, answer: FrontAnswer) => FrontAnswer {
  let calls = 0;
  const lie = (call: FrontCall, result: unknown): FrontAnswer | null => {
    if (call.method === "eth_getBalance" && typeof result === "string") {
      return { result: `0x${(BigInt(result) + 1n).toString(16)}` };
    }
    if (call.method === "eth_getLogs" && Array.isArray(result) && result.length > 0) {
      return { result: result.slice(0, -1) };
    }
    if (
      call.method === "eth_getTransactionReceipt" &&
      result !== null &&
      typeof result === "object"
    ) {
      const receipt = result as { status: string };
      return { result: { ...receipt, status: receipt.status === "0x1" ? "0x0" : "0x1" } };
    }
    return null;
  };
  return (call, answer) => {
    const lying = answer.error === undefined ? lie(call, answer.result) : null;
    if (lying === null || calls++ % 4 !== 0) return answer;
    lies.told++;
    return lying;
  };
}

/** Nethermind's words for a revert: -32015, "VM execution error.", the reason as text. */
const nethermindReverts = (_: FrontCall, answer: FrontAnswer): FrontAnswer =>
  answer.error === undefined
    ? answer
    : { error: { code: -32015, message: "VM execution error.", data: "revert" } };

let honestA: Front;
let honestB: Front;
let lying: Front;
let slowA: Front;
let slowB: Front;
let slowC: Front;

async function send(method: string, params: unknown[]): Promise<string> {
  return node.rpc<string>(method, params);
}

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  logger = await deployContract(node, DEPLOYER, LOGGER_INIT);
  reverter = await deployContract(node, DEPLOYER, REVERTER_INIT);
  // Forty blocks, each a transfer or a log (anvil mines one block per transaction).
  for (let index = 0; index < 40; index++) {
    const tx =
      index % 2 === 0
        ? { from: DEV[0], to: DEV[1 + (index % 4)], value: hex(1000 + index) }
        : { from: DEV[1], to: logger, data: `0x${(index + 1).toString(16).padStart(64, "0")}` };
    txs.push(await send("eth_sendTransaction", [tx]));
  }
  head = Number(await node.rpc<string>("eth_blockNumber"));
  [honestA, honestB, lying, slowA, slowB, slowC] = await Promise.all([
    front(0),
    front(0, nethermindReverts),
    front(0, liar()),
    front(10),
    front(30, nethermindReverts),
    front(50),
  ]);
  stack = await startLocalStack({
    // Two containers over one DynamoDB, as Lambda runs them: the sit-out is the shared state's.
    containers: 2,
    writeMetrics: (line) => metricLines.push(line),
    config: {
      // Every call goes upstream: these are the calls consensus is measured on.
      cache: false,
      hedge: { max_ratio: 0 },
      networks: {
        liars: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "honest-a", url: honestA.url },
            { name: "honest-b", url: honestB.url },
            { name: "liar", url: lying.url },
          ],
          // Back from each strike soon, so it keeps lying until it is found out for good.
          cooldown_seconds: { inconsistent: 0.2 },
          consensus: { methods: METHODS, minority_limit: 20, sit_out_seconds: 600 },
        },
        honest: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "fast", url: slowA.url, priority: 3 },
            { name: "slower", url: slowB.url, priority: 2 },
            { name: "slowest", url: slowC.url, priority: 1 },
          ],
          consensus: { methods: METHODS },
        },
        plain: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "fast", url: slowA.url, priority: 3 },
            { name: "slower", url: slowB.url, priority: 2 },
          ],
        },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([honestA, honestB, lying, slowA, slowB, slowC].map((f) => f?.close()));
  await node?.stop();
});

interface Answer {
  readonly body: { result?: unknown; error?: { code: number; message: string } };
  readonly consensus: string | null;
  readonly ms: number;
}

async function rpc(network: string, method: string, params: unknown[]): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(`${stack.url}/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await response.json()) as Answer["body"];
  return {
    body,
    consensus: response.headers.get("x-gateway-consensus"),
    ms: performance.now() - started,
  };
}

/** The i-th call of the mix: a balance, a log range, a receipt, each at a block of the chain. */
function callOf(i: number): [string, unknown[]] {
  const block = hex(1 + ((i * 7) % head));
  switch (i % 3) {
    case 0:
      return ["eth_getBalance", [DEV[(i * 3) % DEV.length], block]];
    case 1: {
      const from = 1 + ((i * 5) % (head - 4));
      return ["eth_getLogs", [{ address: logger, fromBlock: hex(from), toBlock: hex(from + 3) }]];
    }
    default:
      return ["eth_getTransactionReceipt", [txs[(i * 11) % txs.length]]];
  }
}

async function status(network: string) {
  const body = (await fetch(`${stack.url}/${network}/status`).then((r) => r.json())) as {
    providers: Array<{
      name: string;
      strikes: number;
      consensus: {
        agreed: number;
        minority: number;
        disputed: number;
        sit_out_until: string | null;
      };
    }>;
    events: Array<{ provider: string | null; kind: string; reason: string; detail: string }>;
  };
  return body;
}

function metric(name: string, dimensions: Record<string, string>): number {
  stack.runtime.telemetry.flush();
  return valuesOf(metricsNamed(parseEmf(metricLines), name, dimensions)).reduce((a, b) => a + b, 0);
}

const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

describe("read consensus over three fronts on one chain", () => {
  it("with one front lying on a share of its answers: no wrong answer in 1,200 calls; the liar is struck and left out, the honest fronts never", async () => {
    const CALLS = 1200;
    let wrong = 0;
    const outcomes = new Map<string, number>();
    let next = 0;
    let liarBefore = 0;
    const worker = async () => {
      for (let i = next++; i < CALLS; i = next++) {
        const [method, params] = callOf(i);
        const [answer, truth] = await Promise.all([
          rpc("liars", method, params),
          node.rpc(method, params),
        ]);
        outcomes.set(String(answer.consensus), (outcomes.get(String(answer.consensus)) ?? 0) + 1);
        // A clear error is no wrong answer; a result must be the node's own.
        if ("result" in answer.body && JSON.stringify(answer.body.result) !== JSON.stringify(truth))
          wrong++;
        if (i === CALLS - 200) liarBefore = lying.requests;
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(wrong).toBe(0);
    // Every lie was caught: 20 times in the minority and it sat out.
    expect(lies.told).toBeGreaterThanOrEqual(20);
    expect((outcomes.get("agreed-2") ?? 0) / CALLS).toBeGreaterThan(0.95);

    const shown = await status("liars");
    const byName = Object.fromEntries(shown.providers.map((p) => [p.name, p]));
    // Counts are the answering container's; the sit-out and the events are shared.
    expect(byName.liar?.consensus.minority).toBeGreaterThan(0);
    expect(byName.liar?.consensus.sit_out_until).not.toBeNull();
    expect(byName["honest-a"]?.consensus.minority).toBe(0);
    expect(byName["honest-b"]?.consensus.minority).toBe(0);
    const inconsistent = shown.events.filter(
      (e) => e.kind === "blacklisted" && e.reason === "inconsistent",
    );
    expect(inconsistent.length).toBeGreaterThanOrEqual(3);
    expect(new Set(inconsistent.map((e) => e.provider))).toEqual(new Set(["liar"]));
    expect(inconsistent[0]?.detail).toMatch(
      /at (block|blocks|transaction) .*: answered .* where honest-[ab], honest-[ab] agreed on /,
    );
    expect(shown.events.some((e) => e.kind === "consensus_sat_out" && e.provider === "liar")).toBe(
      true,
    );
    // Sitting out: the last 200 consensus calls never went to it.
    expect(lying.requests - liarBefore).toBe(0);
    expect(metric("consensus_minority", { network: "liars", provider: "honest-a" })).toBe(0);
    expect(
      metric("consensus_minority", { network: "liars", provider: "liar" }),
    ).toBeGreaterThanOrEqual(3);
  }, 60_000);

  it("all honest: about two upstream calls a consensus call, and the p50 added is within the slower participant's latency", async () => {
    const CALLS = 80;
    const before = slowA.requests + slowB.requests + slowC.requests;
    const consensus: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const [method, params] = callOf(i);
      const agreed = await rpc("honest", method, params);
      expect(agreed.consensus).toBe("agreed-2");
      consensus.push(agreed.ms);
      plain.push((await rpc("plain", method, params)).ms);
    }
    const calls = slowA.requests + slowB.requests + slowC.requests - before - CALLS;
    expect(calls / CALLS).toBeLessThanOrEqual(2.05);
    // The participants are the 10 ms and 30 ms fronts, asked at once: about 20 ms more than
    // the plain call's 10 ms front, within the slower one's 30 ms (asked one after the
    // other, it would add 30 ms and more).
    const added = median(consensus) - median(plain);
    expect(added).toBeLessThan(30);
  }, 60_000);

  it("an eth_call revert agrees although one front words it as Nethermind does; viem sees the revert", async () => {
    const answer = await rpc("honest", "eth_call", [{ to: reverter, data: "0x" }, hex(head)]);
    expect(answer.consensus).toBe("agreed-2");
    expect(answer.body.error?.code).toBe(3);
    const client = createPublicClient({
      transport: http(`${stack.url}/honest`, { retryCount: 0 }),
    });
    await expect(
      client.call({ to: reverter as `0x${string}`, data: "0x", blockNumber: BigInt(head) }),
    ).rejects.toThrow(/revert/i);
  });
});
