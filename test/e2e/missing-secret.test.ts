import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";

/**
 * One provider URL whose `${SECRET}` has no value used to stop the whole gateway: locally
 * `npm start` refused to start, and in AWS every request on every network got a 500. Now that
 * provider is left out, shown on the status route with the reason, and everything else serves.
 */

interface LeftOut {
  name: string;
  url: string;
  reason: string;
  detail: string;
}
interface NetworkStatus {
  network: string;
  providers: Array<{ name: string }>;
  providers_left_out: LeftOut[];
}

let node: AnvilNode;
let stack: LocalStack;
const metricLines: string[] = [];

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  stack = await startLocalStack({
    env: { PRESENT_KEY: "present-key-value-1234567890" },
    writeMetrics: (line) => metricLines.push(line),
    config: {
      networks: {
        devnet: {
          chain_id: 31337,
          providers: [
            { name: "keyed", url: `${node.url}/?key=\${MISSING_KEY}`, priority: 2 },
            { name: "open", url: node.url, priority: 1 },
          ],
        },
        other: {
          chain_id: 31337,
          providers: [{ name: "present", url: `${node.url}/?key=\${PRESENT_KEY}` }],
        },
        lonely: {
          chain_id: 31337,
          providers: [{ name: "only", url: `${node.url}/?key=\${MISSING_KEY}` }],
        },
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await node?.stop();
});

async function rpc(network: string) {
  const response = await fetch(`${stack.url}/${network}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  return {
    status: response.status,
    body: await response.text(),
    provider: response.headers.get("x-gateway-provider"),
  };
}

describe("a provider whose secret is missing", () => {
  it("regression: the local stack started with a missing secret and serves every network", async () => {
    expect(await rpc("devnet")).toEqual({
      status: 200,
      body: '{"jsonrpc":"2.0","id":1,"result":"0x7a69"}',
      provider: "open",
    });
    expect((await rpc("other")).provider).toBe("present");
  });

  it("is shown on the status route with the reason, and never gets traffic", async () => {
    const response = await fetch(`${stack.url}/devnet/status`);
    expect(response.status).toBe(200);
    const status = (await response.json()) as NetworkStatus;
    expect(status.providers.map((provider) => provider.name)).toEqual(["open"]);
    expect(status.providers_left_out).toEqual([
      {
        name: "keyed",
        url: `${node.url}?key=***`,
        priority: 2,
        backup: false,
        reason: "secret_unresolved",
        detail: "no value for placeholder ${MISSING_KEY}: set MISSING_KEY in the environment",
      },
    ]);

    const all = (await (await fetch(`${stack.url}/status`)).json()) as {
      networks: NetworkStatus[];
    };
    expect(all.networks.map((network) => network.providers_left_out.length)).toEqual([1, 0, 1]);
    expect(JSON.stringify(all)).not.toContain("present-key-value");
  });

  it("a network whose every provider is left out says so, not that the method is unknown", async () => {
    const answer = await rpc("lonely");
    expect(JSON.parse(answer.body)).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: {
        code: -32603,
        message:
          "all providers failed for eth_chainId; last error: no provider of lonely is in service: every one is left out because a secret of its URL did not resolve (see GET /lonely/status)",
      },
    });
  });

  it("regression: it was HTTP 200, which subsquid's client does not retry; now 502, as when every provider is down (the secret may resolve at the next config load)", async () => {
    expect((await rpc("lonely")).status).toBe(502);
  });

  it("is counted in the providers_left_out metric", async () => {
    stack.runtime.telemetry.flush();
    const gauges = metricLines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((metric) => "providers_left_out" in metric);
    expect(gauges.at(-1)?.providers_left_out).toBe(2);
  });
});
