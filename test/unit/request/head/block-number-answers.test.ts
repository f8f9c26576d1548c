import { describe, expect, it } from "vitest";
import { configSchema } from "../../../../functions/core/config/config-schema.ts";
import { buildModel } from "../../../../functions/core/config/network-model.ts";
import { type Call, parseRequest } from "../../../../functions/core/jsonrpc/jsonrpc.ts";
import {
  answerFromServedHead,
  settleBlockNumbers,
} from "../../../../functions/core/request/head/served-head.ts";
import { answerFrom, failed, openCall } from "../../../../functions/core/request/open-call.ts";
import type { OpenCall, ServedHeadView } from "../../../../functions/core/request/vocabulary.ts";
import type { AttemptSlot } from "../../../../functions/core/routing/selection.ts";

/**
 * What a caller's `eth_blockNumber` is answered with (docs/behaviour.md §10), pure: the served
 * head when there is one, the publication too young to serve, the provider's own number only
 * before any publication and within the reachable head; and which numbers the request reports
 * as answered and handed out (what the publisher may publish).
 */

const model = buildModel(
  configSchema.parse({
    networks: { net: { chain_id: 1, providers: [{ url: "http://p1.test" }] } },
  }),
  (url) => url,
);
const provider = model.networks.get("net")?.providers[0];
if (provider === undefined) throw new Error("no provider");
const SLOT: AttemptSlot = { provider, emergency: false };

function call(text: string): Call {
  const parsed = parseRequest(text, { maxBodyBytes: 10_000, maxBatch: 10 });
  if (parsed.kind !== "single") throw new Error("not a single call");
  return parsed.call;
}

const blockNumber = () =>
  openCall(call('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'), []);

/** An `eth_blockNumber` a provider answered with `result`. */
function answered(result: string): OpenCall {
  const entry = blockNumber();
  answerFrom(entry, `{"jsonrpc":"2.0","id":1,"result":${JSON.stringify(result)}}`, SLOT);
  return entry;
}

const view = (answer: number | null, published: number | null, newest = 105): ServedHeadView => ({
  answer,
  published,
  newest,
  recent: false,
});

const resultOf = (entry: OpenCall) =>
  entry.answer === null ? null : (JSON.parse(entry.answer) as { result: unknown }).result;

describe("settleBlockNumbers", () => {
  it.each<{
    name: string;
    results: string[];
    view: ServedHeadView;
    reachable: number | null;
    handed: unknown[];
    answeredMax: number | null;
    handedOut: number | null;
  }>([
    {
      name: "no publication yet: the provider's number, handed out",
      results: ["0x64"],
      view: view(null, null),
      reachable: 110,
      handed: ["0x64"],
      answeredMax: 100,
      handedOut: 100,
    },
    {
      name: "a batch of two: the higher is reported handed out",
      results: ["0x65", "0x64"],
      view: view(null, null),
      reachable: 110,
      handed: ["0x65", "0x64"],
      answeredMax: 101,
      handedOut: 101,
    },
    {
      name: "exactly the reachable head: still the provider's",
      results: ["0x6e"],
      view: view(null, null),
      reachable: 110,
      handed: ["0x6e"],
      answeredMax: 110,
      handedOut: 110,
    },
    {
      name: "beyond the reachable head: the newest block known to exist instead",
      results: ["0x6f"],
      view: view(null, null, 105),
      reachable: 110,
      handed: ["0x69"],
      answeredMax: 111,
      handedOut: null,
    },
    {
      name: "a served head: it, whatever the provider said",
      results: ["0x70"],
      view: view(103, 104),
      reachable: 110,
      handed: ["0x67"],
      answeredMax: 112,
      handedOut: null,
    },
    {
      name: "a publication too young to serve: that publication",
      results: ["0x70"],
      view: view(null, 104),
      reachable: 110,
      handed: ["0x68"],
      answeredMax: 112,
      handedOut: null,
    },
    {
      name: "a number with text after it is no number: left as the provider's answer",
      results: ["0x64zz"],
      view: view(103, 104),
      reachable: 110,
      handed: ["0x64zz"],
      answeredMax: null,
      handedOut: null,
    },
    {
      name: "a number with text before it is no number either",
      results: ["x0x64"],
      view: view(null, null),
      reachable: 110,
      handed: ["x0x64"],
      answeredMax: null,
      handedOut: null,
    },
  ])("$name", ({ results, view: seen, reachable, handed, answeredMax, handedOut }) => {
    const open = results.map(answered);
    const numbers = settleBlockNumbers(open, seen, new Set(), reachable);
    expect(open.map(resultOf)).toEqual(handed);
    expect(numbers).toEqual({ answered: answeredMax, handedOut });
  });

  it.each<[string, string, number | null, unknown]>([
    ["a provider behind the served head: the served head", "behind", 103, "0x67"],
    ["a provider failing otherwise: no answer", "timeout", 103, null],
    ["behind, with no served head: no answer", "behind", null, null],
  ])("every provider failed it, %s", (_name, signature, served, expected) => {
    const entry = blockNumber();
    failed(entry, { provider: "p1", signature }, "failed");
    settleBlockNumbers([entry], view(served, served), new Set(), 110);
    expect(resultOf(entry)).toBe(expected);
  });

  it("a call answered from the served head before the attempts is left alone", () => {
    const recent = { ...view(103, 103), recent: true };
    const entry = blockNumber();
    const fromHead = answerFromServedHead([entry], recent);
    expect(settleBlockNumbers([entry], view(104, 104), fromHead, 110)).toEqual({
      answered: null,
      handedOut: null,
    });
    expect(resultOf(entry)).toBe("0x67");
  });
});
