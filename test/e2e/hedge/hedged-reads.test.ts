import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { metricsNamed, parseEmf, valuesOf } from "../../support/emf.ts";

/**
 * Hedged reads end to end: the local stack on two real anvil nodes, each behind a shim that
 * counts the calls it gets, one of them delaying answers. A read the slow provider holds past
 * the hedge delay is answered by the other one, byte for byte with the caller's id; the
 * aborted attempt leaves its provider without a strike, a blacklist or a retried error.
 */

const CHAIN_ID = 31337;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/** The hedge waits this long while no p90 is known (the stack has seen too few answers). */
const MAX_MS = 300;

let nodeA: AnvilNode;
let nodeB: AnvilNode;
let slow: FaultShim;
let other: FaultShim;
let stack: LocalStack;
const metricLines: string[] = [];

interface Answer {
  readonly status: number;
  readonly provider: string | null;
  readonly attempts: string | null;
  readonly text: string;
  readonly ms: number;
}

async function post(url: string, body: string): Promise<Answer> {
  const started = performance.now();
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  const text = await response.text();
  return {
    status: response.status,
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
    text,
    ms: performance.now() - started,
  };
}

/** The node's own answer to the same body: what the caller must get, byte for byte. */
async function direct(node: AnvilNode, body: string): Promise<string> {
  return (await post(node.url, body)).text;
}

const balance = (id: string | number) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [DEPLOYER, "0x1"] });

interface ProviderStatus {
  readonly name: string;
  readonly state: string;
  readonly strikes: number;
  readonly blacklist: unknown;
}

async function providers(): Promise<Record<string, ProviderStatus>> {
  const status = (await fetch(`${stack.url}/hedged/status`).then((r) => r.json())) as {
    providers: ProviderStatus[];
  };
  return Object.fromEntries(status.providers.map((provider) => [provider.name, provider]));
}

function metric(name: string, dimensions: Record<string, string>): number {
  stack.runtime.telemetry.flush();
  return valuesOf(metricsNamed(parseEmf(metricLines), name, dimensions)).reduce(
    (sum, value) => sum + value,
    0,
  );
}

beforeAll(async () => {
  [nodeA, nodeB] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID }),
    startAnvil({ chainId: CHAIN_ID }),
  ]);
  // Each node mines two blocks and B gives the deployer another balance at block 1, so an
  // answer for block 1 says which node gave it.
  await nodeB.rpc("anvil_setBalance", [DEPLOYER, "0x4242"]);
  await Promise.all([nodeA.rpc("anvil_mine", ["0x2"]), nodeB.rpc("anvil_mine", ["0x2"])]);
  [slow, other] = await Promise.all([startFaultShim(nodeA.url), startFaultShim(nodeB.url)]);
  stack = await startLocalStack({
    writeMetrics: (line) => metricLines.push(line),
    config: {
      networks: {
        hedged: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "slow", url: slow.url, priority: 2 },
            { name: "other", url: other.url, priority: 1 },
          ],
          // Every request may be hedged, so the test needs no warm-up traffic.
          hedge: { max_ratio: 1, min_ms: 150, max_ms: MAX_MS },
        },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([slow?.close(), other?.close()]);
  await Promise.all([nodeA?.stop(), nodeB?.stop()]);
});

beforeEach(async () => {
  await slow.setFault(null);
});

describe("hedged reads on real nodes", () => {
  it("a read the first provider holds is answered by the next one, byte for byte with the caller's id; the aborted attempt leaves no strike", async () => {
    await slow.setFault({ kind: "slow", ms: 3000 });
    const body = balance("caller-id-ü");
    const before = { slow: slow.requests, other: other.requests };
    const answer = await post(`${stack.url}/hedged`, body);
    expect(answer.status).toBe(200);
    expect(answer.provider).toBe("other");
    expect(answer.attempts).toBe("2");
    expect(answer.text).toBe(await direct(nodeB, body));
    expect(answer.text).toContain('"id":"caller-id-ü"');
    // Answered a little after the hedge delay, long before the slow provider's 3 s.
    expect(answer.ms).toBeGreaterThanOrEqual(MAX_MS - 5);
    expect(answer.ms).toBeLessThan(2000);
    expect([slow.requests - before.slow, other.requests - before.other]).toEqual([1, 1]);

    const status = await providers();
    expect(status.slow).toMatchObject({ state: "healthy", strikes: 0, blacklist: null });
    expect(metric("retried_errors", { network: "hedged", provider: "slow" })).toBe(0);
    expect(metric("hedges", { network: "hedged", provider: "slow", outcome: "started" })).toBe(1);
    expect(metric("hedges", { network: "hedged", provider: "slow", outcome: "won" })).toBe(1);
    expect(metric("hedges", { network: "hedged", provider: "slow", outcome: "aborted" })).toBe(1);
  });

  it("with a slow tail on the first provider, every read answers well before the tail, with no strike", async () => {
    await slow.setFault({ kind: "slow_some", ms: 2000, every: 4 });
    const answers: Answer[] = [];
    for (let id = 0; id < 12; id++) answers.push(await post(`${stack.url}/hedged`, balance(id)));
    for (const [id, answer] of answers.entries()) {
      const node = answer.provider === "slow" ? nodeA : nodeB;
      expect(answer.text).toBe(await direct(node, balance(id)));
      expect(answer.ms).toBeLessThan(1500);
    }
    expect(answers.filter((answer) => answer.provider === "other").length).toBe(3);
    expect((await providers()).slow).toMatchObject({ strikes: 0, blacklist: null });
  });

  it("a healthy provider answering within the delay costs one upstream call per read", async () => {
    const before = slow.requests + other.requests;
    for (let id = 0; id < 20; id++) {
      expect((await post(`${stack.url}/hedged`, balance(id))).provider).toBe("slow");
    }
    expect(slow.requests + other.requests - before).toBe(20);
  });

  it("a heavy read (eth_getLogs) is never hedged: it waits for its provider", async () => {
    await slow.setFault({ kind: "slow", ms: MAX_MS + 400 });
    const before = other.requests;
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_getLogs",
      params: [{ fromBlock: "0x0", toBlock: "0x1" }],
    });
    const answer = await post(`${stack.url}/hedged`, body);
    expect(answer.provider).toBe("slow");
    expect(answer.ms).toBeGreaterThanOrEqual(MAX_MS + 400);
    expect(other.requests).toBe(before);
  });
});
