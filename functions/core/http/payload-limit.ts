import { ErrorCode, errorResponse, isCall, type ParsedRequest } from "../jsonrpc/jsonrpc.ts";

/**
 * Lambda's synchronous invocation limits. Both are measured on the JSON text Lambda carries:
 * the event going in and the result coming out, after JSON escaping (every `"` of a JSON-RPC
 * answer becomes `\"`). Over the response limit Lambda fails the invocation and API Gateway
 * answers a bare 500, so the handler must never return such a result.
 */
export const LAMBDA_REQUEST_LIMIT_BYTES = 6_291_456;
export const LAMBDA_RESPONSE_LIMIT_BYTES = 6_291_556;

/** The most bytes one UTF-16 unit can take once JSON-escaped and UTF-8 encoded (`\u001f`). */
const WORST_ESCAPED_BYTES_PER_UNIT = 6;

/** UTF-8 bytes of `value` serialised as JSON, as Lambda carries it. */
export function serializedBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "null", "utf8");
}

/**
 * Whether `value` serialises within `limit` bytes. Measured only when a cheap bound cannot
 * tell: every string of a typical answer is far under a sixth of the limit.
 */
export function fitsSerialized(value: unknown, limit: number): boolean {
  if (upperBound(value) <= limit) return true;
  return serializedBytes(value) <= limit;
}

/**
 * A generous over-estimate of the serialised size of a Lambda result or event. Runs on every
 * answer, so it walks the keys without building an entries array.
 */
function upperBound(value: unknown): number {
  if (typeof value === "string") return value.length * WORST_ESCAPED_BYTES_PER_UNIT + 2;
  if (typeof value !== "object" || value === null) return 32;
  const record = value as Record<string, unknown>;
  let total = 2;
  for (const key in record) {
    total += key.length * WORST_ESCAPED_BYTES_PER_UNIT + 4 + upperBound(record[key]);
  }
  return total;
}

export function answerTooLargeMessage(bytes: number): string {
  return `response too large: the answer is ${bytes} bytes once JSON-encoded, over the ${LAMBDA_RESPONSE_LIMIT_BYTES} bytes a Lambda function can return: ask for less (fewer calls in a batch, a narrower block range)`;
}

/**
 * The gateway's own error in place of an answer too large to return: one error per call that
 * expects an answer, each with the caller's id, so a batch still gets a batch back.
 */
export function answerTooLargeBody(request: ParsedRequest, bytes: number): string {
  const message = answerTooLargeMessage(bytes);
  switch (request.kind) {
    case "single":
      return errorResponse(request.call.rawId, ErrorCode.responseTooLarge, message);
    case "error":
      return errorResponse(request.rawId, ErrorCode.responseTooLarge, message);
    case "batch": {
      const answers = request.members
        .filter((member) => !isCall(member) || member.rawId !== null)
        .map((member) => errorResponse(member.rawId, ErrorCode.responseTooLarge, message));
      return `[${answers.join(",")}]`;
    }
  }
}
