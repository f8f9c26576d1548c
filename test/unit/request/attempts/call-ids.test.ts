import { describe, expect, it } from "vitest";
import type { UpstreamRequest } from "../../../../functions/core/ports.ts";
import type { HarnessProviders } from "../../../support/gateway-harness.ts";
import { answer } from "../../../support/scripted-upstream.ts";
import {
  replying as node,
  P1,
  P2,
  settledChainHarness,
  TWO_PROVIDERS as two,
} from "../../../support/settled-chain-harness.ts";

/**
 * A single call's id (docs/behaviour.md §2.2): an id nodes cannot read goes upstream as the
 * call's position and the caller's own comes back in the answer, and an answer naming another
 * id than the one the call went with is never taken. The pipeline on a settled chain.
 */
const hex = (n: number) => `0x${n.toString(16)}`;
const _HASH = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

type Providers = HarnessProviders;

function harness(providers: Providers, random: () => number = () => 0.5) {
  return settledChainHarness(providers, { random });
}

describe("a single call's id that nodes cannot read", () => {
  /** A node that reads only string, null and unsigned integer ids, as reth does (anvil takes -7). */
  const strictIds = (request: UpstreamRequest) => {
    const idText = /"id":\s*([^,}]+)/.exec(request.body)?.[1]?.trim() ?? "null";
    const readable = idText === "null" || idText.startsWith('"') || /^\d{1,19}$/.test(idText);
    const body = readable
      ? `{"jsonrpc":"2.0","id":${idText},"result":"0x5"}`
      : '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"}}';
    return answer(body);
  };
  for (const id of ["1.5", "1e2", "18446744073709551616", "1e400", "-7"]) {
    it(`regression: id ${id}, valid JSON-RPC, went upstream as written and the node's 'Invalid request' was the answer (in a batch the same call was served); now the caller gets the answer with their id`, async () => {
      const h = harness(two);
      h.upstream.script(P1, strictIds).script(P2, strictIds);
      const response = await h.gatewayRpc(
        `{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000001","${hex(110)}"]}`,
      );
      expect(response.body).toBe(`{"jsonrpc":"2.0","id":${id},"result":"0x5"}`);
    });
  }
});

describe("a single call's answer is the one with its id", () => {
  const balance = (id: string) =>
    `{"jsonrpc":"2.0","id":${id},"method":"eth_getBalance","params":["0x0000000000000000000000000000000000000007","0x6e"]}`;
  /** Answers every call as if it were another client's request number 0. */
  const confused = () => answer('{"jsonrpc":"2.0","id":0,"result":"0xbad"}');

  it("regression: a single call sent with the caller's own id took an answer naming id 0 (its position, which it did not go with), another request's answer; now it goes to the next provider", async () => {
    const h = harness(two);
    h.upstream.script(P1, confused).script(
      P2,
      node(() => "0x5"),
    );
    const response = await h.gatewayRpc(balance('"abc"'));
    expect(response.body).toBe('{"jsonrpc":"2.0","id":"abc","result":"0x5"}');
  });

  it("holds: a call whose id nodes may not read goes with its position, and the answer naming it is taken", async () => {
    const h = harness(two);
    h.upstream.script(P1, confused).script(
      P2,
      node(() => "0x5"),
    );
    const response = await h.gatewayRpc(balance("1E2"));
    expect(response.body).toBe('{"jsonrpc":"2.0","id":1E2,"result":"0xbad"}');
  });
});
