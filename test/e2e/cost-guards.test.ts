import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";

/**
 * Cost guards on the running gateway (docs/behaviour.md §8): an API key's
 * `requests_per_minute` (its sharing across containers through DynamoDB is
 * test/integration/usage-store.test.ts's).
 */

const KEY = "limited-key-0123456789";
const UNLIMITED = "unlimited-key-0123456789";
const sha = (key: string) => createHash("sha256").update(key).digest("hex");

let node: AnvilNode;
let stack: LocalStack;

beforeAll(async () => {
  node = await startAnvil({ chainId: 31337 });
  stack = await startLocalStack({
    config: {
      api_keys: [
        { name: "limited", sha256: sha(KEY), requests_per_minute: 3 },
        { name: "unlimited", sha256: sha(UNLIMITED) },
      ],
      networks: { devnet: { chain_id: 31337, providers: [{ url: node.url }] } },
    },
  });
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await node?.stop();
});

async function call(key: string) {
  const response = await fetch(`${stack.url}/devnet`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  return { status: response.status, body: (await response.json()) as { error?: { code: number } } };
}

describe("requests_per_minute", () => {
  it("a key over its minute gets 429 -32005; another key is not affected", async () => {
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await call(KEY));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 429, 429]);
    expect(answers[3]?.body.error?.code).toBe(-32005);
    expect((await call(UNLIMITED)).status).toBe(200);
  });
});
