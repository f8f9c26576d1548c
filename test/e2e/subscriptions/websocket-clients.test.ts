import { once } from "node:events";
import { WebSocketProvider } from "ethers";
import { createPublicClient, webSocket } from "viem";
import { foundry } from "viem/chains";
import { getWebSocketRpcClient } from "viem/utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type AnvilNode, startAnvil } from "../../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import { keyHash } from "../../support/socket-harness.ts";

/**
 * The socket's edge through `npm start`'s stack (docs/behaviour.md "Subscriptions over
 * WebSocket"): viem's `webSocket()` transport and ethers' `WebSocketProvider` make their
 * everyday calls over `ws://…/<network>` and get the node's own answers; a batch is answered
 * by id; `eth_subscribe`/`eth_unsubscribe` answer geth's shapes and a push through the
 * management API (the real SDK client, as the follower pushes) reaches the client's
 * subscription; viem's keep-alive holds a socket open past the idle limit; an API key's
 * connection bound holds across the stack's two socket containers.
 */

const CHAIN_ID = 31337;
const KEY = "ws-e2e-key-0001";
const BOUNDED_KEY = "ws-e2e-key-0002";
const ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
/** Idle limit shortened from 10 minutes, so the keep-alive scene runs in seconds. */
const IDLE_MS = 1500;

let node: AnvilNode;
let stack: LocalStack;
let url: string;

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  stack = await startLocalStack({
    containers: 2,
    webSocket: { idleTimeoutMs: IDLE_MS },
    config: {
      api_keys: [
        { name: "app", sha256: keyHash(KEY) },
        { name: "bounded", sha256: keyHash(BOUNDED_KEY) },
      ],
      networks: {
        devnet: { chain_id: CHAIN_ID, providers: [{ name: "anvil", url: node.url }] },
        // The same chain, where a key may hold two sockets at once.
        bounded: {
          chain_id: CHAIN_ID,
          providers: [{ name: "anvil", url: node.url }],
          subscriptions: { max_connections_per_key: 2 },
        },
      },
    },
  });
  url = `${stack.wsUrl}/devnet?key=${KEY}`;
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await node?.stop();
});

const viemClient = (target = url, keepAlive: false | { interval: number } = false) =>
  createPublicClient({
    chain: foundry,
    transport: webSocket(target, { keepAlive, reconnect: false }),
  });

async function closeViem(target = url): Promise<void> {
  (await getWebSocketRpcClient(target, { keepAlive: false, reconnect: false })).close();
}

function rawSocket(target: string): Promise<WebSocket> {
  const socket = new WebSocket(target);
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve(socket));
    socket.once("unexpected-response", (_req, res) =>
      reject(Object.assign(new Error("refused"), { status: res.statusCode })),
    );
    socket.once("error", reject);
  });
}

const ask = async (socket: WebSocket, body: unknown) => {
  const reply = once(socket, "message").then(([data]) => JSON.parse((data as Buffer).toString()));
  socket.send(typeof body === "string" ? body : JSON.stringify(body));
  return reply;
};

describe("viem's webSocket() transport", () => {
  it("reads as it reads the node: eth_chainId, eth_getBalance, eth_call, eth_blockNumber", async () => {
    const client = viemClient();
    expect(await client.getChainId()).toBe(CHAIN_ID);
    expect(await client.getBalance({ address: ACCOUNT })).toBe(
      BigInt(await node.rpc("eth_getBalance", [ACCOUNT, "latest"])),
    );
    const call = { to: ACCOUNT as `0x${string}`, data: "0x" as const };
    expect((await client.call(call)).data).toBe(
      (await node.rpc("eth_call", [call, "latest"])) === "0x"
        ? undefined
        : await node.rpc("eth_call", [call, "latest"]),
    );
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(
      BigInt(await node.rpc("eth_blockNumber", [])),
    );
    await closeViem();
  });

  it("subscribes with geth's shapes, receives what is pushed to its subscription, and unsubscribes", async () => {
    const client = viemClient();
    const received: unknown[] = [];
    const { subscriptionId, unsubscribe } = await client.transport.subscribe({
      params: ["newHeads"],
      onData: (data: unknown) => received.push(data),
    });
    expect(subscriptionId).toMatch(/^0x[0-9a-f]{32}$/);
    const [record] = (await stack.subscriptions.list("devnet")).filter(
      (entry) => entry.id === subscriptionId,
    );
    expect(record).toMatchObject({
      kind: "newHeads",
      caller: "app",
      nextBlock: Number(await node.rpc("eth_blockNumber", [])) + 1,
    });
    const header = await node.rpc("eth_getBlockByNumber", ["latest", false]);
    const notification = {
      jsonrpc: "2.0",
      method: "eth_subscription",
      params: { subscription: subscriptionId, result: header },
    };
    expect(
      await stack.push.post("devnet", record?.connection as string, JSON.stringify(notification)),
    ).toBe("ok");
    await expect.poll(() => received.length).toBe(1);
    expect(received[0]).toEqual(notification.params);
    expect(await unsubscribe()).toMatchObject({ result: true });
    expect(
      (await stack.subscriptions.list("devnet")).some((entry) => entry.id === subscriptionId),
    ).toBe(false);
    await closeViem();
  });

  it("its keep-alive (net_version, id null, every interval) holds the socket open past the idle limit", async () => {
    const target = `${url}&scene=keep-alive`;
    const client = viemClient(target, { interval: 300 });
    expect(await client.getChainId()).toBe(CHAIN_ID);
    const { socket } = await client.transport.getRpcClient();
    const idle = await rawSocket(url);
    const idleClosed = once(idle, "close");
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 2));
    expect((await idleClosed)[0]).toBe(1001);
    expect(socket.readyState).toBe(WebSocket.OPEN);
    expect(await client.getChainId()).toBe(CHAIN_ID);
    (
      await getWebSocketRpcClient(target, { keepAlive: { interval: 300 }, reconnect: false })
    ).close();
  });
});

describe("the socket for any client", () => {
  it("answers a batch by id, subscriptions and calls together, and bad input with a JSON-RPC error", async () => {
    const socket = await rawSocket(url);
    const answer = (await ask(socket, [
      { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] },
      { jsonrpc: "2.0", id: "s", method: "eth_subscribe", params: ["logs", { address: ACCOUNT }] },
      { jsonrpc: "2.0", id: 3, method: "eth_getBalance", params: [ACCOUNT, "latest"] },
      { jsonrpc: "2.0", id: 4, method: "eth_subscribe", params: ["newPendingTransactions"] },
    ])) as Array<{ id: unknown; result?: string; error?: { code: number } }>;
    expect(answer.map((entry) => entry.id)).toEqual([1, "s", 3, 4]);
    expect(answer[0]?.result).toBe("0x7a69");
    expect(answer[1]?.result).toMatch(/^0x[0-9a-f]{32}$/);
    expect(answer[2]?.result).toBe(await node.rpc("eth_getBalance", [ACCOUNT, "latest"]));
    expect(answer[3]?.error?.code).toBe(-32601);
    expect(
      await ask(socket, {
        jsonrpc: "2.0",
        id: 5,
        method: "eth_unsubscribe",
        params: [answer[1]?.result],
      }),
    ).toMatchObject({ id: 5, result: true });
    expect(await ask(socket, "not json at all")).toMatchObject({
      id: null,
      error: { code: -32700 },
    });
    socket.close();
  });

  it("lets an API key hold max_connections_per_key sockets across containers, refuses the next, and a close frees one", async () => {
    const target = `${stack.wsUrl}/bounded?key=${BOUNDED_KEY}`;
    const first = await rawSocket(target);
    const second = await rawSocket(target);
    await expect(rawSocket(target)).rejects.toMatchObject({ status: 429 });
    await expect(rawSocket(`${stack.wsUrl}/bounded?key=wrong`)).rejects.toMatchObject({
      status: 401,
    });
    first.close();
    await expect
      .poll(
        async () =>
          await rawSocket(target).then(
            (socket) => {
              socket.close();
              return "open";
            },
            () => "refused",
          ),
        { timeout: 5000 },
      )
      .toBe("open");
    second.close();
  });
});

describe("ethers' WebSocketProvider", () => {
  it("makes its calls and takes a pushed block through its newHeads subscription", async () => {
    const provider = new WebSocketProvider(url, CHAIN_ID);
    expect(await provider.getBlockNumber()).toBe(Number(await node.rpc("eth_blockNumber", [])));
    expect(await provider.getBalance(ACCOUNT)).toBe(
      BigInt(await node.rpc("eth_getBalance", [ACCOUNT, "latest"])),
    );
    expect(await provider.call({ to: ACCOUNT, data: "0x" })).toBe(
      await node.rpc("eth_call", [{ to: ACCOUNT, data: "0x" }, "latest"]),
    );
    const blocks: number[] = [];
    await provider.on("block", (number: number) => blocks.push(number));
    await expect
      .poll(
        async () =>
          (await stack.subscriptions.list("devnet")).filter(
            (entry) => entry.caller === "app" && entry.kind === "newHeads",
          ).length,
      )
      .toBeGreaterThan(0);
    const [record] = (await stack.subscriptions.list("devnet")).filter(
      (entry) => entry.kind === "newHeads",
    );
    const header = (await node.rpc("eth_getBlockByNumber", ["latest", false])) as {
      number: string;
    };
    const next = { ...header, number: `0x${(Number(header.number) + 1).toString(16)}` };
    await stack.push.post(
      "devnet",
      record?.connection as string,
      JSON.stringify({
        jsonrpc: "2.0",
        method: "eth_subscription",
        params: { subscription: record?.id, result: next },
      }),
    );
    await expect.poll(() => blocks).toContain(Number(next.number));
    await provider.destroy();
  });
});
