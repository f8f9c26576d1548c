import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";
import type { HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer, type SentCall } from "../../../support/scripted-upstream.ts";
import {
  P1,
  P2,
  settledChainHarness,
  TWO_PROVIDERS as two,
} from "../../../support/settled-chain-harness.ts";

/**
 * A log query every provider refused (docs/behaviour.md §2.4, §12.8): the caller gets the last
 * refusal, and `x-gateway-provider` names the provider whose answer it is. The pipeline on a
 * settled chain.
 */
const hex = (n: number) => `0x${n.toString(16)}`;
const _HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

describe("x-gateway-provider on a log query's error", () => {
  it("regression: an eth_getLogs past the head, which every provider refused, handed the caller the last refusal with an empty x-gateway-provider (which means 'from the cache'); now it names the provider whose answer the caller got", async () => {
    const h = harness(two);
    const failing = (request: UpstreamRequest) => {
      const sent = JSON.parse(request.body) as SentCall;
      // anvil's words for a toBlock past its head.
      const error = {
        code: -32602,
        message: "BlockOutOfRangeError: block height is 125 but requested was 300",
      };
      return answer(JSON.stringify({ jsonrpc: "2.0", id: sent.id, error }));
    };
    h.upstream.script(P1, failing).script(P2, failing);
    const response = await h.rpc(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getLogs",
        params: [{ fromBlock: hex(100), toBlock: hex(300) }],
      }),
    );
    expect(response.json.error).toMatchObject({ code: -32602 });
    expect(response.headers["x-gateway-provider"]).toMatch(/^p[12]$/);
  });
});
