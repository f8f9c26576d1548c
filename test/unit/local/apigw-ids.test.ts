import { describe, expect, it } from "vitest";
import { apiRequestId, randomHex } from "../../../local/apigw-ids.ts";

/** The emulator's request and trace ids, drawn from a pool of random bytes. */

describe("emulator ids", () => {
  it("writes request ids as API Gateway does: 16 base64 characters ending in =", () => {
    expect(apiRequestId()).toMatch(/^[A-Za-z0-9+/]{15}=$/);
  });

  it("draws distinct ids across many refills of the pool", () => {
    const ids = new Set<string>();
    const hex = new Set<string>();
    for (let index = 0; index < 5000; index++) {
      ids.add(apiRequestId());
      hex.add(randomHex(24));
    }
    expect(ids.size).toBe(5000);
    expect(hex.size).toBe(5000);
    for (const digits of hex) expect(digits).toMatch(/^[0-9a-f]{24}$/);
  });
});
