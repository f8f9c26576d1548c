import { encode } from "@ethereumjs/rlp";
import { bytesToHex, keccak256, parseGwei, type TransactionSerializable } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { readRawTransaction } from "../../../../functions/core/request/send/transactions.ts";

/** Hash and chain id of signed raw transactions (docs/behaviour.md §4.12), signed by viem. */

// anvil's first default account: a well-known test key, never a real one.
const account = privateKeyToAccount(
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
);
const to = "0x70997970c51812dc3a010c7d01b50e677d4c79c8";

const transactions: Array<[string, TransactionSerializable, number | null]> = [
  [
    "legacy, EIP-155",
    { chainId: 31337, nonce: 1, to, value: 1n, gas: 21000n, gasPrice: parseGwei("1") },
    31337,
  ],
  ["legacy, chain 1", { chainId: 1, nonce: 0, to, value: 0n, gas: 21000n, gasPrice: 1n }, 1],
  [
    "EIP-2930",
    { type: "eip2930", chainId: 10, nonce: 3, to, gas: 30000n, gasPrice: 2n, accessList: [] },
    10,
  ],
  [
    "EIP-1559",
    {
      type: "eip1559",
      chainId: 8453,
      nonce: 7,
      to,
      gas: 21000n,
      maxFeePerGas: 3n,
      maxPriorityFeePerGas: 1n,
    },
    8453,
  ],
];

describe("readRawTransaction", () => {
  it.each(transactions)(
    "%s: the hash every node reports, and the chain id",
    async (_name, tx, chainId) => {
      const raw = await account.signTransaction(tx);
      expect(readRawTransaction(raw)).toEqual({ hash: keccak256(raw), chainId });
    },
  );

  it("a pre-EIP-155 legacy transaction names no chain", async () => {
    const raw = await account.signTransaction({
      nonce: 1,
      to,
      value: 1n,
      gas: 21000n,
      gasPrice: 1n,
    });
    expect(readRawTransaction(raw)).toEqual({ hash: keccak256(raw), chainId: null });
  });

  it.each([[""], ["0x"], ["0x123"], ["nothex"], [42], [null], [["0x01"]]])(
    "%j is no transaction",
    (raw) => {
      expect(readRawTransaction(raw)).toBeNull();
    },
  );

  it("bytes that are not RLP still get their hash, with no chain id", () => {
    expect(readRawTransaction("0xc3ffff")).toEqual({ hash: keccak256("0xc3ffff"), chainId: null });
    expect(readRawTransaction("0x02ff")).toEqual({ hash: keccak256("0x02ff"), chainId: null });
  });
});

describe("readRawTransaction at the edges of the encoding", () => {
  const hex = (bytes: Uint8Array) => bytesToHex(bytes);
  const typed = (type: number, chainId: Uint8Array | number) =>
    hex(new Uint8Array([type, ...encode([chainId, 1, 2])]));
  /** A legacy transaction's 9 fields (or as many as given) with `v` in place 7. */
  const legacy = (v: number, fields = 9) =>
    hex(encode(Array.from({ length: fields }, (_, index) => (index === 6 ? v : 1))));

  it.each<[string, string, number | null]>([
    ["type byte 0x7f, the last a type may take", typed(0x7f, 5), 5],
    ["a chain id of 6 bytes", typed(2, new Uint8Array([1, 0, 0, 0, 0, 0])), 2 ** 40],
    [
      "a chain id of 7 bytes is none a chain has",
      typed(2, new Uint8Array([1, 0, 0, 0, 0, 0, 0])),
      null,
    ],
    ["legacy with v 35: chain 0", legacy(35), 0],
    ["legacy with v 36: chain 0", legacy(36), 0],
    ["legacy with v 37: chain 1", legacy(37), 1],
    ["legacy with v 28: no chain", legacy(28), null],
    ["a legacy list of 8 fields is no transaction of any chain", legacy(37, 8), null],
  ])("%s", (_name, raw, chainId) => {
    expect(readRawTransaction(raw)).toEqual({ hash: keccak256(raw as `0x${string}`), chainId });
  });

  it("text before the 0x is not hex", () => {
    expect(readRawTransaction("tx0x02c0")).toBeNull();
  });
});
