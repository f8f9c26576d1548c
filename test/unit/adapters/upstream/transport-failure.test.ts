import { describe, expect, it } from "vitest";
import { transportFailure } from "../../../../functions/adapters/upstream/transport-failure.ts";

/** Network errors as the classifier's kinds, with a message that names the code once. */

function nodeError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe("transportFailure", () => {
  it.each([
    [
      "regression: Node's message already names its code, which was written twice ('ECONNREFUSED connect ECONNREFUSED …')",
      nodeError("connect ECONNREFUSED 127.0.0.1:8545", "ECONNREFUSED"),
      { kind: "connection", message: "connection: connect ECONNREFUSED 127.0.0.1:8545" },
    ],
    [
      "a message without its code gets the code in front",
      nodeError("other side closed", "UND_ERR_SOCKET"),
      { kind: "connection", message: "connection: UND_ERR_SOCKET other side closed" },
    ],
    [
      "undici's wrapper: the cause's code",
      Object.assign(new Error("fetch failed"), {
        cause: nodeError("read ECONNRESET", "ECONNRESET"),
      }),
      { kind: "connection", message: "connection: ECONNRESET fetch failed" },
    ],
    [
      "a TLS failure",
      nodeError("certificate has expired", "CERT_HAS_EXPIRED"),
      { kind: "tls", message: "tls: CERT_HAS_EXPIRED certificate has expired" },
    ],
    [
      "a timeout",
      nodeError("connect ETIMEDOUT 10.0.0.1:443", "ETIMEDOUT"),
      { kind: "timeout", message: "timeout: connect ETIMEDOUT 10.0.0.1:443" },
    ],
    ["not an Error", "boom", { kind: "connection", message: "connection: boom" }],
  ])("%s", (_name, error, expected) => {
    expect(transportFailure(error)).toEqual(expected);
  });
});
