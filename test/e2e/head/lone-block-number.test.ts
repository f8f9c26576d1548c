import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnvilNode } from "../../../local/anvil.ts";
import type { LocalStack } from "../../../local/stack.ts";
import type { HttpAnswer } from "../../support/gateway-client.ts";
import { type LyingFront, startLyingFront } from "../../support/lying-front.ts";
import {
  type MultiContainerStack,
  multiContainerStack,
} from "../../support/multi-container-stack.ts";

/**
 * The short path of a lone eth_blockNumber the served head answers (docs/behaviour.md §10.3),
 * over HTTP and attacked (its fixes are "regression: …"): four
 * proxy containers, the monitor ticking, one real chain behind an honest provider and a liar
 * that claims a head 1000 blocks ahead (in eth_blockNumber and in its latest block). Every
 * answer the short path gives must carry what the full pipeline's does: the key check and its
 * per-minute limit, CORS, GET mode's Cache-Control, the refusals; and the number it gives
 * never goes back and never leaves the real chain.
 */

const AHEAD = 1000;
const LIMIT = 5;
const OPEN_KEY = "open-key-attack8";
const LIMITED_KEY = "limited-key-attack8";
const ORIGIN = "https://dapp.example";

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const hex = (n: number) => `0x${n.toString(16)}`;

let node: AnvilNode;
let liar: LyingFront;
let relay: LyingFront;
let scene: MultiContainerStack;
let stack: LocalStack;
let liarCalls = 0;

async function realHead(): Promise<number> {
  return Number.parseInt(String(await node.rpc("eth_blockNumber", [])), 16);
}

beforeAll(async () => {
  scene = await multiContainerStack({
    containers: 4,
    chain: { chainId: 31337, blockTimeSeconds: 1 },
    // A block time longer than the publication delay: a publication stays "within a block
    // time" for a while, so most eth_blockNumber calls take the short path.
    network: { block_time_seconds: 12 },
    config: {
      cors_origins: [ORIGIN],
      api_keys: [
        { name: "open", sha256: sha256(OPEN_KEY) },
        { name: "limited", sha256: sha256(LIMITED_KEY), requests_per_minute: LIMIT },
      ],
    },
    providers: async (chain) => {
      node = chain;
      liar = await startLyingFront(chain.url, async (call, forward) => {
        liarCalls++;
        if (call.method === "eth_blockNumber") return { result: hex((await realHead()) + AHEAD) };
        const answer = await forward();
        const params = call.params as unknown[] | undefined;
        if (call.method === "eth_getBlockByNumber" && params?.[0] === "latest") {
          const block = answer.result as { number: string };
          return { result: { ...block, number: hex(Number.parseInt(block.number, 16) + AHEAD) } };
        }
        return answer;
      });
      relay = await startLyingFront(chain.url, (_call, forward) => forward());
      return [
        { name: "liar", url: liar.url, priority: 5 },
        { name: "honest", url: chain.url, priority: 1 },
        { name: "relay", url: relay.url, priority: 1 },
      ];
    },
    networks: (providers) => ({
      allowlisted: {
        chain_id: 31337,
        block_time_seconds: 1,
        methods_allow: ["eth_chainId"],
        providers,
      },
    }),
  });
  ({ stack } = scene);
  // The served head is answered once the monitor has published it and the delay has passed.
  for (let wait = 0; wait < 100; wait++) {
    const answer = await send("/devnet", blockNumber(1));
    if (answer.headers["x-gateway-attempts"] === "0") break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}, 60_000);

afterAll(async () => {
  await scene?.close();
  await liar?.close();
  await relay?.close();
});

const blockNumber = (id: unknown) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_blockNumber" });

async function send(
  path: string,
  body?: string,
  headers: Record<string, string> = { "x-api-key": OPEN_KEY },
): Promise<HttpAnswer> {
  const response = await fetch(`${stack.url}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body,
  });
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  return { status: response.status, headers: out, text: await response.text() };
}

/** Seconds into the current minute: the key limit's window starts afresh each minute. */
async function awayFromMinuteEdge(): Promise<void> {
  const into = Date.now() % 60_000;
  if (into > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_000 - into + 200));
}

describe("the short path over HTTP, attacked", () => {
  it("is taken: the served head answers with no attempt", async () => {
    const answer = await send("/devnet", blockNumber(1));
    expect(answer.status).toBe(200);
    expect(answer.headers).toMatchObject({
      "x-gateway-attempts": "0",
      "x-gateway-provider": "",
      "x-gateway-cache": "bypass",
    });
  });

  it("without a key, or with a wrong one, 401 before any answer", async () => {
    const attempts: Array<Record<string, string>> = [
      {},
      { "x-api-key": "nope" },
      { "x-api-key": "" },
    ];
    for (const headers of attempts) {
      const answer = await send("/devnet", blockNumber(1), headers);
      expect(answer.status).toBe(401);
      expect(answer.text).not.toContain("result");
    }
  });

  it("a key's requests_per_minute counts short-path requests: over it, 429", async () => {
    await awayFromMinuteEdge();
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT * 6; i++) {
      const answer = await send("/devnet", blockNumber(i), { "x-api-key": LIMITED_KEY });
      statuses.push(answer.status);
      if (answer.status === 200) expect(answer.headers["x-gateway-attempts"]).toBe("0");
    }
    const admitted = statuses.filter((status) => status === 200).length;
    // Each of the 4 containers may admit up to the limit before their counts are shared.
    expect(admitted).toBeGreaterThanOrEqual(LIMIT);
    expect(admitted).toBeLessThanOrEqual(LIMIT * 4);
    expect(statuses.filter((status) => status === 429).length).toBe(LIMIT * 6 - admitted);
  });

  it("GET mode: the served head with the realtime Cache-Control, private under keys", async () => {
    const answer = await send(`/devnet/get/eth_blockNumber?key=${OPEN_KEY}`, undefined, {});
    expect(answer.status).toBe(200);
    expect(answer.headers["x-gateway-attempts"]).toBe("0");
    expect(answer.headers["cache-control"]).toBe("private, max-age=12");
    expect(JSON.parse(answer.text).result).toMatch(/^0x[0-9a-f]+$/);
  });

  it("CORS: an allowed origin gets its allow-origin header, another none", async () => {
    const allowed = await send("/devnet", blockNumber(1), {
      "x-api-key": OPEN_KEY,
      origin: ORIGIN,
    });
    expect(allowed.headers["x-gateway-attempts"]).toBe("0");
    expect(allowed.headers["access-control-allow-origin"]).toBe(ORIGIN);
    const other = await send("/devnet", blockNumber(1), {
      "x-api-key": OPEN_KEY,
      origin: "https://evil.example",
    });
    expect(other.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("a notification: 204 with no body; a bad body: 400; an unknown network: 404", async () => {
    const notification = await send("/devnet", '{"jsonrpc":"2.0","method":"eth_blockNumber"}');
    expect(notification).toMatchObject({ status: 204, text: "" });
    expect((await send("/devnet", '{"method":"eth_blockNumber"')).status).toBe(400);
    expect((await send("/nowhere", blockNumber(1))).status).toBe(404);
  });

  it("a network whose methods_allow leaves it out refuses it, and no provider is asked", async () => {
    const before = liarCalls;
    const answer = await send("/allowlisted", blockNumber(4));
    expect(JSON.parse(answer.text)).toMatchObject({ id: 4, error: { code: -32601 } });
    expect(liarCalls).toBe(before);
  });

  it("regression: the liar's number, answered before the monitor's first tick, was published and every container served it, 1000 blocks ahead of the chain; now over 400 calls (POST and GET, across the containers) the number never goes back and never passes the real chain's head", async () => {
    let highest = 0;
    let backwards = 0;
    let beyond = 0;
    for (let call = 0; call < 400; call++) {
      const answer =
        call % 2 === 0
          ? await send("/devnet", blockNumber(call))
          : await send(`/devnet/get/eth_blockNumber?key=${OPEN_KEY}`, undefined, {});
      const number = Number.parseInt(String(JSON.parse(answer.text).result), 16);
      if (number < highest) backwards++;
      highest = Math.max(highest, number);
      if (number > (await realHead())) beyond++;
    }
    expect({ backwards, beyond }).toEqual({ backwards: 0, beyond: 0 });
  });
});
