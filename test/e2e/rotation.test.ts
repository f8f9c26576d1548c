import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type Fault, type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";

/**
 * Rotation away from a provider that answers, but wrongly, end to end: force-rotate after
 * `force_rotate_errors` (3) unclassified errors in a row ("leveldb: closed" from a real HTTP
 * upstream), with and without a backup, and the wrong-chain blacklist. Both recover on the
 * timer, without a probe. The clock is injected; anvil nodes with different heads tell which
 * provider answered.
 */

const CHAIN_ID = 31337;
const MIN = 60_000;
const DEPLOYER = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const UNCLASSIFIED: Fault = {
  kind: "jsonrpc_error",
  code: -32000,
  message: "leveldb: closed 9f3c",
};

let now = Date.UTC(2026, 10, 29, 12);
let nodeA: AnvilNode;
let nodeB: AnvilNode;
let stack: LocalStack;
let demoting: FaultShim;
let blacklisting: FaultShim;
let wrongChain: FaultShim;

interface Answer {
  status: number;
  provider: string | null;
  attempts: string | null;
  text: string;
}

async function post(url: string, body: string): Promise<Answer> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body,
  });
  return {
    status: response.status,
    provider: response.headers.get("x-gateway-provider"),
    attempts: response.headers.get("x-gateway-attempts"),
    text: await response.text(),
  };
}

const balance = (id: number) =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "eth_getBalance", params: [DEPLOYER, "latest"] });

interface ProviderStatus {
  name: string;
  state: string;
  strikes: number;
  blacklist: { reason: string; until: string } | null;
}

async function provider(network: string, name: string): Promise<ProviderStatus> {
  const status = (await fetch(`${stack.url}/${network}/status`).then((r) => r.json())) as {
    providers: ProviderStatus[];
  };
  const found = status.providers.find((entry) => entry.name === name);
  if (!found) throw new Error(`no provider ${name}`);
  return found;
}

beforeAll(async () => {
  [nodeA, nodeB] = await Promise.all([
    startAnvil({ chainId: CHAIN_ID }),
    startAnvil({ chainId: CHAIN_ID }),
  ]);
  // Different balances, so an answer says which node gave it.
  await nodeB.rpc("anvil_setBalance", [DEPLOYER, "0x4242"]);
  [demoting, blacklisting, wrongChain] = await Promise.all([
    startFaultShim(nodeA.url),
    startFaultShim(nodeA.url),
    startFaultShim(nodeA.url),
  ]);
  const pair = (primary: string, secondaryIsBackup: boolean) => ({
    chain_id: CHAIN_ID,
    providers: [
      { name: "primary", url: primary, priority: 2 },
      { name: "secondary", url: nodeB.url, priority: 1, backup: secondaryIsBackup },
    ],
  });
  stack = await startLocalStack({
    clock: () => now,
    config: {
      networks: {
        demote: pair(demoting.url, false),
        "with-backup": pair(blacklisting.url, true),
        chain: pair(wrongChain.url, false),
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await Promise.all([demoting?.close(), blacklisting?.close(), wrongChain?.close()]);
  await Promise.all([nodeA?.stop(), nodeB?.stop()]);
});

describe("force-rotate", () => {
  it("without a backup: three unclassified errors in a row move traffic to the next provider for 1 min", async () => {
    await demoting.setFault(UNCLASSIFIED);
    const url = `${stack.url}/demote`;
    // Two errors, then a good answer: the count starts again.
    for (const id of [1, 2]) expect((await post(url, balance(id))).provider).toBe("primary");
    await demoting.setFault(null);
    expect(await post(url, balance(3))).toMatchObject({ provider: "primary", status: 200 });
    await demoting.setFault(UNCLASSIFIED);

    // Three in a row, each returned to the caller as is.
    for (const id of [4, 5, 6]) {
      const answer = await post(url, balance(id));
      expect(answer).toMatchObject({ status: 200, provider: "primary", attempts: "1" });
      expect(answer.text).toBe((await post(demoting.url, balance(id))).text);
      expect(answer.text).toContain("leveldb: closed");
    }
    // Traffic has moved: the next request is the secondary's, in one attempt.
    const moved = await post(url, balance(7));
    expect(moved).toMatchObject({ status: 200, provider: "secondary", attempts: "1" });
    expect(moved.text).toBe((await post(nodeB.url, balance(7))).text);
    // Demoted in this container only: no blacklist, no strike.
    expect(await provider("demote", "primary")).toMatchObject({
      state: "healthy",
      strikes: 0,
      blacklist: null,
    });

    // After force_rotate's cooldown (60 s) the primary is first again.
    now += MIN - 1;
    expect((await post(url, balance(8))).provider).toBe("secondary");
    now += 1;
    expect((await post(url, balance(9))).provider).toBe("primary");
  });

  it("with a backup: the provider is blacklisted (force_rotate, 1 min) and recovers on the timer", async () => {
    await blacklisting.setFault(UNCLASSIFIED);
    const url = `${stack.url}/with-backup`;
    for (const id of [1, 2, 3]) expect((await post(url, balance(id))).provider).toBe("primary");
    const rotatedAt = now;
    expect(await provider("with-backup", "primary")).toMatchObject({
      state: "blacklisted",
      strikes: 1,
      blacklist: { reason: "force_rotate", until: new Date(rotatedAt + MIN).toISOString() },
    });
    const backup = await post(url, balance(4));
    expect(backup.provider).toBe("secondary");
    expect(backup.text).toBe((await post(nodeB.url, balance(4))).text);

    // No probe: when the minute is over it is healthy again, and first.
    await blacklisting.setFault(null);
    now = rotatedAt + MIN;
    expect((await provider("with-backup", "primary")).state).toBe("healthy");
    const back = await post(url, balance(5));
    expect(back.provider).toBe("primary");
    expect(back.text).toBe((await post(nodeA.url, balance(5))).text);
  });
});

describe("wrong chain", () => {
  it("a provider answering another chain id is blacklisted for 10 min (wrong_chain) and recovers on the timer", async () => {
    await wrongChain.setFault({ kind: "chain_id", id: 999 });
    const url = `${stack.url}/chain`;
    const chainId = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
    const answer = await post(url, chainId);
    expect(answer).toMatchObject({ status: 200, provider: "secondary", attempts: "2" });
    expect(answer.text).toBe('{"jsonrpc":"2.0","id":1,"result":"0x7a69"}');
    const blacklistedAt = now;
    expect(await provider("chain", "primary")).toMatchObject({
      state: "blacklisted",
      strikes: 1,
      blacklist: { reason: "wrong_chain", until: new Date(blacklistedAt + 10 * MIN).toISOString() },
    });
    expect((await post(url, balance(2))).provider).toBe("secondary");

    await wrongChain.setFault(null);
    now = blacklistedAt + 10 * MIN - 1;
    expect((await provider("chain", "primary")).state).toBe("blacklisted");
    now += 1;
    expect((await provider("chain", "primary")).state).toBe("healthy");
    expect((await post(url, balance(3))).provider).toBe("primary");
  });
});
