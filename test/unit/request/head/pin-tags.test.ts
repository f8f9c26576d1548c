import { describe, expect, it } from "vitest";
import { type Call, parseRequest } from "../../../../functions/core/jsonrpc/jsonrpc.ts";
import { pinBlockTags } from "../../../../functions/core/request/head/pin-tags.ts";

/** Block tags pinned to the served numbers (docs/behaviour.md §10), text-faithfully. */

const TAGS = { latest: 0x64, safe: 0x60, finalized: 0x40 };

function call(text: string): Call {
  const parsed = parseRequest(text, { maxBodyBytes: 10_000, maxBatch: 10 });
  if (parsed.kind !== "single") throw new Error("not a single call");
  return parsed.call;
}

describe("pinBlockTags", () => {
  it.each([
    [
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab", "latest"]}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab", "0x64"]}',
    ],
    [
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["finalized",true]}',
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["0x40",true]}',
    ],
    [
      '{"id":2,"method":"eth_call","params":[{"to":"0xab","data":"0x"},"safe"],"jsonrpc":"2.0"}',
      '{"id":2,"method":"eth_call","params":[{"to":"0xab","data":"0x"},"0x60"],"jsonrpc":"2.0"}',
    ],
    [
      '{"jsonrpc":"2.0","id":3,"method":"eth_getLogs","params":[{"fromBlock":"finalized","toBlock":"latest","address":"0xab"}]}',
      '{"jsonrpc":"2.0","id":3,"method":"eth_getLogs","params":[{"fromBlock":"0x40","toBlock":"0x64","address":"0xab"}]}',
    ],
    [
      '{"jsonrpc":"2.0","id":4,"method":"eth_getLogs","params":[{"toBlock":"latest","fromBlock":"0x1","address":"0xab"}]}',
      '{"jsonrpc":"2.0","id":4,"method":"eth_getLogs","params":[{"toBlock":"0x64","fromBlock":"0x1","address":"0xab"}]}',
    ],
    [
      '{"jsonrpc":"2.0","id":5,"method":"eth_getLogs","params":[{"fromBlock":"0x1","fromBlock":"safe"}]}',
      '{"jsonrpc":"2.0","id":5,"method":"eth_getLogs","params":[{"fromBlock":"0x1","fromBlock":"0x60"}]}',
    ],
  ])("%s", (text, pinned) => {
    const written = call(text);
    const before = structuredClone(written.params);
    const result = pinBlockTags(written, TAGS);
    expect(result.raw).toBe(pinned);
    // The params are what the pinned text parses to, members in the same order.
    const parsed = (JSON.parse(pinned) as { params: unknown[] }).params;
    expect(result.params).toStrictEqual(parsed);
    expect(JSON.stringify(result.params)).toBe(JSON.stringify(parsed));
    // The caller's call is left as written.
    expect(written.params).toStrictEqual(before);
  });

  it.each([
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","pending"]}'],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","0x10"]}'],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab"]}'],
    [
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab",{"blockNumber":"latest"}]}',
    ],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}'],
    ['{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"address":"0xab"}]}'],
    [
      `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByHash","params":["0x${"ab".repeat(32)}",false]}`,
    ],
  ])("leaves %s as written", (text) => {
    const original = call(text);
    expect(pinBlockTags(original, TAGS)).toBe(original);
  });

  it("leaves a tag whose number is unknown as written", () => {
    const original = call(
      '{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0xab","safe"]}',
    );
    expect(pinBlockTags(original, { ...TAGS, safe: null })).toBe(original);
  });
});
