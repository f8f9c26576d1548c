import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isKnownMethod } from "../../functions/core/methods/catalogue.ts";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { type FaultShim, startFaultShim } from "../../local/fault-shim.ts";
import { type LocalStack, startLocalStack } from "../../local/stack.ts";
import { GatewayClient, type RpcMember } from "../support/gateway-client.ts";
import { callerShapedKeys, tableKeys } from "../support/gateway-table.ts";
import { type StackMonitor, stackMonitor } from "../support/stack-monitor.ts";
import { fuzzParams, hostileString, jsonStringText } from "./arbitraries.ts";

/**
 * Caller-chosen method names and batch shapes against the whole gateway (anvil behind two
 * counting shims, dynalite, the real monitor's quorum): whatever names a caller invents, the
 * table holds no more items than before, no provider is penalised, and a request costs at
 * most one upstream call, on the first provider.
 */

const CHAIN_ID = 31337;
const NETWORK = "fuzz";
let node: AnvilNode;
let first: FaultShim;
let second: FaultShim;
let stack: LocalStack;
let monitor: StackMonitor;
const client = new GatewayClient();
const now = Date.now();
const clock = () => now;

/** Prefixes of methods anvil serves beyond the catalogue (they would change the chain). */
const ANVIL_OWN = /^(anvil|evm|hardhat|ots|erigon)_/;
/** What the gateway takes for a method name: printable ASCII, no space, quote or backslash. */
const METHOD_NAME = /^[\x21\x23-\x5b\x5d-\x7e]{1,128}$/;

const ALNUM = [..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"];
const madeUpName = fc
  .oneof(
    fc
      .string({ unit: fc.constantFrom(...ALNUM), minLength: 1, maxLength: 40 })
      .map((s) => `zz_${s}`),
    fc
      .tuple(
        fc.constantFrom("eth_", "net_", "web3_", "debug_", "trace_", "txpool_", "admin_", ""),
        fc.string({ unit: fc.constantFrom(...ALNUM), maxLength: 16 }),
      )
      .map(([prefix, rest]) => prefix + rest),
    // Near misses of real names: case, spaces, a NUL.
    fc.constantFrom(
      "ETH_CHAINID",
      "eth_chainid",
      " eth_chainId",
      "eth_chainId ",
      "eth_chainId\u0000",
    ),
    hostileString(24),
    fc.string({ minLength: 200, maxLength: 2000 }),
  )
  .filter((name) => !isKnownMethod(name) && !ANVIL_OWN.test(name));

type Id = number | string | null | undefined;
const callerId: fc.Arbitrary<Id> = fc.oneof(
  fc.integer({ min: 0, max: 4 }),
  fc.string({ unit: fc.constantFrom(...ALNUM), maxLength: 6 }),
  fc.constant(null),
  fc.constant(undefined),
);

/** One member of a request, its text and the answer it must get (undefined: none). */
interface Member {
  readonly text: string;
  readonly expected: { id?: unknown; code?: number; result?: string } | undefined;
}

const idText = (id: Id) => (id === undefined ? "" : `"id":${JSON.stringify(id)},`);

const madeUpCall: fc.Arbitrary<Member> = fc.tuple(madeUpName, callerId).map(([name, id]) => ({
  text: `{"jsonrpc":"2.0",${idText(id)}"method":${jsonStringText(name)},"params":[]}`,
  // A name no node could have is refused by the gateway itself, notification or not.
  expected: !METHOD_NAME.test(name)
    ? { code: -32600 }
    : id === undefined
      ? undefined
      : { id, code: -32601 },
}));

const realCall: fc.Arbitrary<Member> = callerId.map((id) => ({
  text: `{"jsonrpc":"2.0",${idText(id)}"method":"eth_chainId","params":[]}`,
  expected: id === undefined ? undefined : { id, result: `0x${CHAIN_ID.toString(16)}` },
}));

const invalidMember: fc.Arbitrary<Member> = fc
  .constantFrom("1", '"x"', "[]", "{}", '{"jsonrpc":"2.0","id":9}', "null")
  .map((text) => ({ text, expected: { code: -32600 } }));

const request = fc.oneof(
  madeUpCall.map((member) => ({ single: true, members: [member] })),
  fc
    .array(
      fc.oneof(
        { weight: 6, arbitrary: madeUpCall },
        { weight: 1, arbitrary: realCall },
        { weight: 1, arbitrary: invalidMember },
      ),
      { minLength: 1, maxLength: 40 },
    )
    .map((members) => ({ single: false, members })),
);

/** The member's fields that `expected` names (`code`: its error code), to compare with it. */
function project(member: RpcMember | undefined, expected: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.keys(expected).map((key) => [
      key,
      key === "code" ? member?.error?.code : member?.[key as keyof RpcMember],
    ]),
  );
}

beforeAll(async () => {
  node = await startAnvil({ chainId: CHAIN_ID });
  [first, second] = await Promise.all([startFaultShim(node.url), startFaultShim(node.url)]);
  stack = await startLocalStack({
    clock,
    config: {
      networks: {
        [NETWORK]: {
          chain_id: CHAIN_ID,
          providers: [
            { name: "first", url: first.url, priority: 2 },
            { name: "second", url: second.url, priority: 1 },
          ],
        },
      },
    },
  });
  monitor = stackMonitor(stack, { clock });
  await monitor.tick();
}, 60_000);

afterAll(async () => {
  await stack?.close();
  await monitor?.close();
  await Promise.all([first?.close(), second?.close()]);
  await node?.stop();
  await client.close();
});

describe("made-up method names: bounded state, no penalties", () => {
  it("no request grows the table, penalises a provider or costs more than one upstream call", async () => {
    const penalties = async () =>
      (await client.status(stack.url, NETWORK)).providers.map((p) => ({
        name: p.name,
        strikes: p.strikes,
        blacklist: p.blacklist,
        capability_blacklists: p.capability_blacklists,
      }));
    const unpenalised = await penalties();
    expect(unpenalised).toEqual([
      { name: "first", strikes: 0, blacklist: null, capability_blacklists: [] },
      { name: "second", strikes: 0, blacklist: null, capability_blacklists: [] },
    ]);
    await fc.assert(
      fc.asyncProperty(request, async ({ single, members }) => {
        // Compared run by run, so a shrunk counterexample is the request that did it.
        const keysBefore = callerShapedKeys(await tableKeys(stack.store));
        const penaltiesBefore = await penalties();
        const before = { first: first.requests, second: second.requests };
        const body = single
          ? (members[0]?.text ?? "")
          : `[${members.map((m) => m.text).join(",")}]`;
        const answer = await client.send(`${stack.url}/${NETWORK}`, body);

        const expected = members.flatMap((m) => (m.expected === undefined ? [] : [m.expected]));
        if (expected.length === 0) {
          expect(answer.text).toBe("");
        } else {
          const parsed = JSON.parse(answer.text) as RpcMember | RpcMember[];
          const got = Array.isArray(parsed) ? parsed : [parsed];
          expect(got.map((member, i) => project(member, expected[i] ?? {}))).toEqual(expected);
        }
        expect(first.requests - before.first).toBeLessThanOrEqual(1);
        expect(second.requests - before.second).toBe(0);
        expect(callerShapedKeys(await tableKeys(stack.store))).toEqual(keysBefore);
        expect(await penalties()).toEqual(penaltiesBefore);
      }),
      fuzzParams(25),
    );
    expect(await penalties()).toEqual(unpenalised);
  }, 120_000);
});
