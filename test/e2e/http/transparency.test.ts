import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalStack, startLocalStack } from "../../../local/stack.ts";
import {
  loadExecutionApisFixtures,
  type ReplayUpstream,
  startReplayUpstream,
} from "../../support/execution-apis.ts";

/**
 * Transparency: every recorded exchange of the Ethereum execution-apis conformance suite,
 * replayed by an upstream stand-in, comes through the gateway byte for byte (the caller's id
 * is the recorded one): errors, nulls and large results alike, escapes and number spellings
 * included.
 */
const fixtures = loadExecutionApisFixtures();
const exchanges = fixtures.flatMap((fixture) =>
  fixture.exchanges.map((exchange, index) => ({ name: `${fixture.file}#${index}`, ...exchange })),
);

let upstream: ReplayUpstream;
let stack: LocalStack;

beforeAll(async () => {
  upstream = await startReplayUpstream(exchanges);
  stack = await startLocalStack({
    config: {
      // The fixtures' chain (genesis.json of the suite).
      networks: {
        hive: {
          chain_id: 0xc72dd9d5e883e,
          providers: [{ name: "replay", url: upstream.url }],
          // The suite covers debug_* and testing_* too; only the gateway's own default denials stay.
          methods_deny: ["admin_*", "personal_*", "miner_*", "engine_*", "debug_setHead"],
        },
      },
    },
  });
}, 30_000);

afterAll(async () => {
  await stack?.close();
  await upstream?.close();
});

describe("execution-apis fixtures pass through unchanged", () => {
  it("has the recorded exchanges", () => {
    expect(fixtures.length).toBeGreaterThan(100);
    expect(fixtures.every((fixture) => fixture.exchanges.length > 0)).toBe(true);
  });

  it.each(exchanges)("$name", async ({ request, response }) => {
    const answer = await fetch(`${stack.url}/hive`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: request,
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-gateway-provider")).toBe("replay");
    expect(answer.headers.get("x-gateway-attempts")).toBe("1");
    expect(await answer.text()).toBe(response);
  });
});
