import { describe, expect, it } from "vitest";
import { keyStillServes } from "../../../functions/core/subscriptions/key-standing.ts";

/**
 * Whether the key a connection (or its subscription) was opened with still serves it under
 * the config in force (docs/behaviour.md §15.3): what the socket drops a connection for, and
 * what the follower delivers nothing for.
 */

const key = (name: string, sha256: string) => ({ name, sha256, requestsPerMinute: null });
const KEYS = [key("alice", "aa"), key("bob", "bb")];

describe("keyStillServes", () => {
  it.each([
    ["no keys configured: anyone, keyed or not", { caller: "alice", keySha256: "aa" }, [], true],
    ["no keys configured, keyless", { caller: "" }, [], true],
    ["its key, under the same hash", { caller: "alice", keySha256: "aa" }, KEYS, true],
    [
      "its key rotated (a new hash under its name)",
      { caller: "alice", keySha256: "a0" },
      KEYS,
      false,
    ],
    ["its key removed", { caller: "carol", keySha256: "cc" }, KEYS, false],
    ["opened without keys, keys configured since", { caller: "" }, KEYS, false],
    [
      "a record without the hash (written before it was kept): by name",
      { caller: "bob" },
      KEYS,
      true,
    ],
  ])("%s: %s", (_name, holder, apiKeys, serves) => {
    expect(keyStillServes(holder, apiKeys)).toBe(serves);
  });
});
