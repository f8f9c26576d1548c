import { describe, expect, it } from "vitest";
import { makeScrubber, makeSecretScrubber } from "../../../functions/core/config/redact.ts";

/**
 * Answers stay byte-faithful (docs/behaviour.md §8): a secret is masked in an answer only as a
 * whole token and only when long enough to be a key, while logs keep masking every occurrence.
 */

const KEY = "a1b2c3d4e5f6";

describe("masking secrets in answers to callers", () => {
  it.each([
    [
      "an upstream echoing its URL with the key in the path",
      `{"error":{"message":"bad request to https://rpc.test/v3/${KEY}"}}`,
      '{"error":{"message":"bad request to https://rpc.test/v3/***"}}',
    ],
    [
      "the key as a query value",
      `{"error":{"message":"see /rpc?key=${KEY}&x=1"}}`,
      '{"error":{"message":"see /rpc?key=***&x=1"}}',
    ],
    [
      "regression: a block whose hex contains the key arrives unchanged",
      `{"result":{"hash":"0x00ff${KEY}99","extraData":"0x${KEY}"}}`,
      `{"result":{"hash":"0x00ff${KEY}99","extraData":"0x${KEY}"}}`,
    ],
  ])("%s", (_name, answer, expected) => {
    expect(makeSecretScrubber([KEY])(answer)).toBe(expected);
  });

  it("regression: a short secret-like value never changes an answer", () => {
    const answer = '{"jsonrpc":"2.0","id":1,"result":"0xbeefbeef","note":"beef"}';
    expect(makeSecretScrubber(["beef"])(answer)).toBe(answer);
  });

  it("logs still lose every occurrence of a secret, however short or embedded", () => {
    const scrub = makeScrubber([], ["beef", KEY]);
    expect(scrub(`0x00${KEY}99 beef`)).toBe("0x00***99 ***");
  });
});
