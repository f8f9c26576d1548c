import { describe, expect, it } from "vitest";
import { configSchema } from "../../../../../functions/core/config/config-schema.ts";
import { parseConfig } from "../../../../../functions/core/config/network-model.ts";
import { bloomsRead } from "../../../../../functions/core/request/logs/checks/logs-answer-check.ts";
import {
  bloomBits,
  bloomTestFor,
  type LogFilter,
  logFilterOf,
  logMatches,
} from "../../../../../functions/core/request/logs/checks/logs-bloom.ts";
import { completenessOf } from "../../../../../functions/core/request/logs/checks/logs-completeness.ts";
import type { BlockHeader } from "../../../../../functions/core/request/logs/checks/logs-headers.ts";

/**
 * The bloom math and the completeness rule (docs/behaviour.md §12.12), pure. The bloom below is
 * a real block's, taken from anvil: two logs of contract 0x5fbd…, one with topic 0x00…00, the
 * other with the caller 0xf39f… as topic (test/integration/request/logs/checks/logs-bloom-anvil.test.ts checks
 * every block of a chain the same way).
 */

const ANVIL_BLOOM =
  "0x00000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000040020000000000000100000800000000000000000000000000000000000000000000000000000000000000000000000000000000000000000200000000000000000000000000000000000000000000000000000000000000000000000000000040000000200000000000000000000000002000000000000000000020000000000000000000000000000000000000000000000000000000000000000000";
const CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
const OTHER_CONTRACT = "0x1111111111111111111111111111111111111111";
const TOPIC_ZERO = `0x${"0".repeat(64)}`;
const CALLER_TOPIC = `0x${"0".repeat(24)}f39fd6e51aad88f6f4ce6ab8827279cfffb92266`;
const UNSEEN_TOPIC = `0x${"ab".repeat(32)}`;
const ZERO_BLOOM = `0x${"0".repeat(512)}`;
const FULL_BLOOM = `0x${"f".repeat(512)}`;

const filter = (address: unknown, topics?: unknown): LogFilter => {
  const read = logFilterOf({ address, topics });
  if (read === null) throw new Error("not a filter");
  return read;
};

describe("bloomBits", () => {
  it("takes 11 bits from each of the first three byte pairs of the keccak-256", () => {
    // keccak256("") = c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470
    expect(bloomBits(new Uint8Array())).toEqual([0xc5d2 & 2047, 0x4601 & 2047, 0x86f7 & 2047]);
  });
});

describe("a filter against a real block's bloom", () => {
  const rows: ReadonlyArray<readonly [string, LogFilter, boolean | null, unknown?]> = [
    ["the contract that logged", filter(CONTRACT), true],
    ["the contract in upper case", filter(CONTRACT.toUpperCase().replace("0X", "0x")), true],
    ["another contract", filter(OTHER_CONTRACT), false],
    ["one of several addresses that logged", filter([OTHER_CONTRACT, CONTRACT]), true],
    ["the contract and its first topic", filter(CONTRACT, [TOPIC_ZERO]), true],
    ["the contract and the caller's topic", filter(CONTRACT, [CALLER_TOPIC]), true],
    ["the contract and a topic no log had", filter(CONTRACT, [UNSEEN_TOPIC]), false],
    ["a wildcard position, then a topic no log had", filter(CONTRACT, [null, UNSEEN_TOPIC]), false],
    ["any of a position's topics", filter(null, [[UNSEEN_TOPIC, CALLER_TOPIC]]), true],
    ["no address, no topics: any log", filter(null), true],
    ["an empty list of addresses is any address", filter([]), true],
    ["no log at all: a zero bloom", filter(null), false, ZERO_BLOOM],
    [
      "a full bloom says maybe to anything",
      filter(OTHER_CONTRACT, [UNSEEN_TOPIC]),
      true,
      FULL_BLOOM,
    ],
    ["no bloom: cannot tell", filter(CONTRACT), null, undefined],
    ["a bloom of the wrong length: cannot tell", filter(CONTRACT), null, "0x00"],
    ["a bloom that is not hex: cannot tell", filter(CONTRACT), null, `0x${"z".repeat(512)}`],
  ];
  it.each(rows)("%s", (...row) => {
    const [, asked, expected] = row as unknown as [string, LogFilter, boolean | null];
    const given = row.length > 3 ? row[3] : ANVIL_BLOOM;
    expect(bloomTestFor(asked)(given)).toBe(expected);
  });
});

describe("logFilterOf", () => {
  it.each([
    ["an address that is not 20 bytes", { address: "0x1234" }],
    ["a topic that is not 32 bytes", { topics: ["0x12"] }],
    ["topics that are not a list", { topics: "0x12" }],
    ["an address that is a number", { address: 7 }],
    ["not an object", "latest"],
  ])("%s: not read (the node's to refuse)", (_name, given) => {
    expect(logFilterOf(given)).toBeNull();
  });
});

describe("logMatches (the receipts' tie-break, filtered locally)", () => {
  const log = { address: CONTRACT, topics: [TOPIC_ZERO, CALLER_TOPIC] };
  it.each([
    ["its address", filter(CONTRACT), true],
    ["another address", filter(OTHER_CONTRACT), false],
    ["its topics in place", filter(CONTRACT, [TOPIC_ZERO, CALLER_TOPIC]), true],
    ["its topics swapped", filter(CONTRACT, [CALLER_TOPIC, TOPIC_ZERO]), false],
    ["a third topic it does not have", filter(null, [null, null, UNSEEN_TOPIC]), false],
    ["a wildcard then its second topic", filter(null, [[], CALLER_TOPIC]), true],
  ])("%s", (_name, asked, expected) => {
    expect(logMatches(log, asked)).toBe(expected);
  });
  it("something that is not a log matches nothing", () => {
    expect(logMatches("0x", filter(null))).toBe(false);
  });
});

const header = (
  number: number,
  bloom: string | null,
  hash = `0x${"0".repeat(62)}${number.toString(16).padStart(2, "0")}`,
): BlockHeader => ({
  number,
  hash,
  logsBloom: bloom,
});
const ofContract = bloomTestFor(filter(CONTRACT));

describe("completenessOf", () => {
  const rows: ReadonlyArray<{
    readonly name: string;
    readonly logs: ReadonlyArray<{ block: number; hash: string | null }>;
    readonly headers: readonly BlockHeader[];
    readonly bloom?: typeof ofContract | null;
    readonly expected: ReturnType<typeof completenessOf>;
  }> = [
    {
      name: "an empty answer for blocks whose blooms hold no such log: complete",
      logs: [],
      headers: [header(10, ZERO_BLOOM), header(11, ZERO_BLOOM)],
      expected: { kind: "complete", checked: 2 },
    },
    {
      name: "an empty answer for a block whose bloom holds the filter: a bloom hit",
      logs: [],
      headers: [header(10, ZERO_BLOOM), header(11, ANVIL_BLOOM)],
      expected: { kind: "bloom_hits", blocks: [header(11, ANVIL_BLOOM)], checked: 2 },
    },
    {
      name: "a short answer: logs of one block, none of another whose bloom holds the filter",
      logs: [{ block: 11, hash: header(11, null).hash }],
      headers: [header(10, ANVIL_BLOOM), header(11, ANVIL_BLOOM), header(12, ANVIL_BLOOM)],
      expected: {
        kind: "bloom_hits",
        blocks: [header(12, ANVIL_BLOOM), header(10, ANVIL_BLOOM)],
        checked: 2,
      },
    },
    {
      name: "every block with a hit has its logs: complete",
      logs: [
        { block: 10, hash: header(10, null).hash },
        { block: 11, hash: header(11, null).hash },
      ],
      headers: [header(10, ANVIL_BLOOM), header(11, ANVIL_BLOOM)],
      expected: { kind: "complete", checked: 0 },
    },
    {
      name: "a log naming another hash than the header at its height: a stale log",
      logs: [{ block: 11, hash: `0x${"9".repeat(64)}` }],
      headers: [header(11, ANVIL_BLOOM)],
      expected: {
        kind: "stale_log",
        block: 11,
        hash: `0x${"9".repeat(64)}`,
        expected: header(11, null).hash,
      },
    },
    {
      name: "a log naming no hash, where a header is held: a stale log",
      logs: [{ block: 11, hash: null }],
      headers: [header(11, ANVIL_BLOOM)],
      expected: { kind: "stale_log", block: 11, hash: null, expected: header(11, null).hash },
    },
    {
      name: "a log of a block no header is held for: nothing to say",
      logs: [{ block: 13, hash: `0x${"9".repeat(64)}` }],
      headers: [header(11, ZERO_BLOOM)],
      expected: { kind: "complete", checked: 1 },
    },
    {
      name: "headers held outside the range are not read",
      logs: [],
      headers: [header(9, ANVIL_BLOOM), header(15, ANVIL_BLOOM)],
      expected: { kind: "complete", checked: 0 },
    },
    {
      name: "a header without a bloom: not checked",
      logs: [],
      headers: [header(11, null)],
      expected: { kind: "complete", checked: 0 },
    },
    {
      name: "blooms off (a chain whose blooms mean something else): hashes only",
      logs: [],
      headers: [header(11, ANVIL_BLOOM)],
      bloom: null,
      expected: { kind: "complete", checked: 0 },
    },
  ];
  it.each(rows)("$name", ({ logs, headers, bloom, expected }) => {
    const held = new Map(headers.map((held) => [held.number, held]));
    expect(
      completenessOf({
        from: 10,
        to: 12,
        logs,
        headers: held,
        bloom: bloom === undefined ? ofContract : bloom,
      }),
    ).toEqual(expected);
  });
});

describe("logs_bloom: which chains' blooms are read", () => {
  it.each([
    ["auto on Ethereum", 1, "auto", true],
    [
      "auto on Avalanche C-Chain (ACP-194: a bloom covers the receipts a block settles)",
      43114,
      "auto",
      false,
    ],
    ["auto on Avalanche Fuji", 43113, "auto", false],
    ["auto on Oasis Sapphire", 23294, "auto", false],
    ["standard on Avalanche, as the operator says", 43114, "standard", true],
    ["off on Ethereum, as the operator says", 1, "off", false],
  ] as const)("%s", (_name, chainId, setting, expected) => {
    expect(bloomsRead(chainId, setting)).toBe(expected);
  });

  it("the config takes the keys, with their defaults, and names a bad value", () => {
    const parsed = configSchema.parse({
      networks: { a: { chain_id: 1, providers: [{ url: "https://a.example.com/" }] } },
    });
    expect(parsed).toMatchObject({
      logs_bloom: "auto",
      logs_check_headers: 8,
      logs_check_receipts: 2,
      logs_check_window_blocks: 128,
    });
    for (const bad of [
      { logs_bloom: "maybe" },
      { logs_check_headers: 65 },
      { logs_check_receipts: -1 },
    ]) {
      const result = parseConfig({
        networks: { a: { chain_id: 1, providers: [{ url: "https://a.example.com/" }], ...bad } },
      });
      expect(result.ok).toBe(false);
      if (!result.ok) expect(result.problems[0]?.path).toBe(`networks.a.${Object.keys(bad)[0]}`);
    }
  });
});
