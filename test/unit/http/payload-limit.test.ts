import { describe, expect, it } from "vitest";
import {
  answerTooLargeBody,
  fitsSerialized,
  LAMBDA_RESPONSE_LIMIT_BYTES,
  serializedBytes,
} from "../../../functions/core/http/payload-limit.ts";
import { parseRequest } from "../../../functions/core/jsonrpc/jsonrpc.ts";

const NO_LIMITS = { maxBodyBytes: Number.POSITIVE_INFINITY, maxBatch: Number.POSITIVE_INFINITY };

/** A Lambda result whose body is `body`, as the handler returns it. */
const result = (body: string) => ({
  statusCode: 200,
  headers: { "content-type": "application/json" },
  body,
});

/** Lambda's own measure: the UTF-8 length of the result's JSON text. */
const lambdaSize = (value: unknown) => Buffer.byteLength(JSON.stringify(value), "utf8");

describe("serializedBytes", () => {
  it.each([
    ["plain ASCII", "abc"],
    ["quotes (escaped to two bytes each)", '"'.repeat(1000)],
    ["backslashes", "\\".repeat(1000)],
    ["control characters (escaped to six bytes)", "\u0001".repeat(1000)],
    ["newlines and tabs", "\n\t".repeat(500)],
    ["multi-byte UTF-8", "é€😀".repeat(300)],
    ["a lone surrogate (escaped by JSON.stringify)", "\ud800x"],
  ])("measures %s as Lambda does", (_name, body) => {
    expect(serializedBytes(result(body))).toBe(lambdaSize(result(body)));
  });
});

describe("fitsSerialized", () => {
  const overhead = lambdaSize(result(""));
  const room = LAMBDA_RESPONSE_LIMIT_BYTES - overhead;

  it.each([
    ["a body of ASCII exactly at the limit", "a".repeat(room), true],
    ["one byte over", "a".repeat(room + 1), false],
    ["quotes that fit raw but not once escaped", '"'.repeat(room / 2 + 1), false],
    ["quotes that fit once escaped", '"'.repeat(Math.floor(room / 2)), true],
    ["an eth_getLogs-like answer of 5.5 MB (escaping adds a fifth)", logs(5_500_000), false],
    ["a small answer", '{"jsonrpc":"2.0","id":1,"result":"0x1"}', true],
  ])("%s", (_name, body, fits) => {
    expect(fitsSerialized(result(body), LAMBDA_RESPONSE_LIMIT_BYTES)).toBe(fits);
    expect(lambdaSize(result(body)) <= LAMBDA_RESPONSE_LIMIT_BYTES).toBe(fits);
  });
});

/** A JSON-RPC answer of about `bytes` bytes whose result is many short strings. */
function logs(bytes: number): string {
  const item = '"0x1234",';
  return `{"jsonrpc":"2.0","id":1,"result":[${item.repeat(bytes / item.length)}"0x0"]}`;
}

describe("answerTooLargeBody", () => {
  const bytes = 7_000_000;

  it("answers a single call with its id and a message that asks for less", () => {
    const request = parseRequest(
      '{"jsonrpc":"2.0","id":"q-7","method":"eth_getLogs","params":[{}]}',
      NO_LIMITS,
    );
    expect(JSON.parse(answerTooLargeBody(request, bytes))).toEqual({
      jsonrpc: "2.0",
      id: "q-7",
      error: {
        code: -32003,
        message: expect.stringMatching(
          /^response too large: .*7000000 bytes .* over the 6291556 bytes .* ask for less/,
        ),
      },
    });
  });

  it("answers a batch with one error per call, in order, skipping notifications", () => {
    const request = parseRequest(
      '[{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[]},' +
        '{"jsonrpc":"2.0","method":"eth_subscribe","params":[]},' +
        '{"jsonrpc":"2.0","id":{"bad":1},"method":"eth_chainId"},' +
        '{"jsonrpc":"2.0","id":3,"method":"eth_getBlockByNumber","params":["latest",true]}]',
      NO_LIMITS,
    );
    const answers = JSON.parse(answerTooLargeBody(request, bytes)) as Array<{ id: unknown }>;
    expect(answers.map((answer) => answer.id)).toEqual([1, null, 3]);
  });
});
