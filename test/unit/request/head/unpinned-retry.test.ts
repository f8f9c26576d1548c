import { describe, expect, it } from "vitest";
import type { Call } from "../../../../functions/core/jsonrpc/jsonrpc.ts";
import {
  settleUnpinnedRetries,
  unpinnedRetries,
} from "../../../../functions/core/request/head/unpinned-retry.ts";
import { openCall } from "../../../../functions/core/request/open-call.ts";
import type { OpenCall } from "../../../../functions/core/request/vocabulary.ts";

/**
 * A call whose pinned `latest` every provider answered from behind is sent once more as the
 * caller wrote it (docs/behaviour.md §10.4): which calls, and what the caller's call keeps.
 */

const callAbout = (block: string): Call => ({
  position: 0,
  raw: `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x01","${block}"]}`,
  method: "eth_getBalance",
  params: ["0x01", block],
  rawId: "1",
});
const WRITTEN = callAbout("latest");
const PINNED = callAbout("0x78");
const noOrder = () => [];

function pinnedCall(
  failures: readonly string[],
  options: { answer?: string; unpinned?: Call | null } = {},
): OpenCall {
  const entry = openCall(PINNED, [], options.unpinned === undefined ? WRITTEN : options.unpinned);
  for (const signature of failures) entry.failures.push({ provider: "p", signature });
  entry.attempts = failures.length;
  if (options.answer !== undefined) entry.answer = options.answer;
  return entry;
}

describe("unpinnedRetries: which calls go again as written", () => {
  it.each([
    { case: "every provider answered from behind", failures: ["behind", "behind"], resent: true },
    { case: "one provider answered from behind", failures: ["behind"], resent: true },
    {
      case: "one behind, another failing otherwise",
      failures: ["behind", "retry/transient/HTTP 502"],
      resent: false,
    },
    { case: "no attempt failed (none was made)", failures: [], resent: false },
    { case: "failures of another kind only", failures: ["retry/timeout/timeout"], resent: false },
  ])("$case: resent $resent", ({ failures, resent }) => {
    const retries = unpinnedRetries([pinnedCall(failures)], noOrder);
    expect(retries.length).toBe(resent ? 1 : 0);
    if (resent) expect(retries[0]?.retry.call).toBe(WRITTEN);
  });

  it("a call already answered is not resent", () => {
    expect(unpinnedRetries([pinnedCall(["behind"], { answer: "{}" })], noOrder)).toEqual([]);
  });

  it("a call the gateway did not pin (it named the block itself) is not resent", () => {
    expect(unpinnedRetries([pinnedCall(["behind"], { unpinned: null })], noOrder)).toEqual([]);
  });

  it("the resent call walks the order given for the call as written", () => {
    const order = [{ provider: { name: "q" } }] as unknown as ReturnType<typeof noOrder>;
    const [retry] = unpinnedRetries([pinnedCall(["behind"])], (call) =>
      call === WRITTEN ? order : [],
    );
    expect(retry?.retry.order).toBe(order);
  });
});

describe("settleUnpinnedRetries: what the caller's call keeps", () => {
  it("an answer to the call as written is the caller's, marked as sent unpinned", () => {
    const original = pinnedCall(["behind"]);
    const [retry] = unpinnedRetries([original], noOrder);
    if (retry === undefined) throw new Error("no retry");
    retry.retry.answer = '{"result":"0x76"}';
    retry.retry.attempts = 1;
    settleUnpinnedRetries([retry]);
    expect(original).toMatchObject({
      answer: '{"result":"0x76"}',
      sentUnpinned: true,
      attempts: 2,
    });
  });

  it("a resend that failed too leaves no provider's words about the pinned block as the answer", () => {
    const original = pinnedCall(["behind"]);
    original.fallback = { text: '{"error":{"message":"requested was 120"}}', provider: "p" };
    const [retry] = unpinnedRetries([original], noOrder);
    if (retry === undefined) throw new Error("no retry");
    retry.retry.attempts = 1;
    retry.retry.lastError = "p: timeout";
    retry.retry.failures.push({ provider: "p", signature: "retry/timeout/timeout" });
    settleUnpinnedRetries([retry]);
    expect(original).toMatchObject({
      answer: null,
      fallback: null,
      lastError: "p: timeout",
      sentUnpinned: false,
    });
    expect(original.failures.map((failure) => failure.signature)).toEqual([
      "behind",
      "retry/timeout/timeout",
    ]);
  });
});
