import { describe, expect, it } from "vitest";
import {
  ALREADY_KNOWN,
  BATCH_LIMIT,
  CALLERS_FAULT,
  FORBIDDEN,
  INVALID_REQUEST,
  LAGGING_BACKEND,
  LOGS_RANGE_TOO_WIDE,
  LOGS_TOO_LARGE,
  LOGS_TOO_MANY,
  METHOD_UNSUPPORTED,
  PERMANENT_UNCLASSIFIED,
  QUOTA,
  RATE_LIMIT,
  TRANSIENT_PHRASES,
} from "../../../functions/core/classify/classify-patterns.ts";

/**
 * The phrases that name a kind of upstream failure (docs/behaviour.md §4), each form a
 * pattern takes on its own: the optional words left out, numbers of several digits, the words
 * apart, capitals. How a whole answer is judged is in classify.test.ts; here each pattern is
 * held to every variant it was written for, so none is lost to a tidy-up.
 */

describe("each variant a pattern is written for", () => {
  it.each<[RegExp, string, string]>([
    [RATE_LIMIT, "RATE_LIMIT", "ratelimit exceeded"],
    [RATE_LIMIT, "RATE_LIMIT", "Your app has exceeded its compute units per second capacity"],
    [QUOTA, "QUOTA", "quota for this month has been exceeded"],
    [FORBIDDEN, "FORBIDDEN", "invalid apikey"],
    [FORBIDDEN, "FORBIDDEN", "apikey is invalid"],
    [FORBIDDEN, "FORBIDDEN", "api-key is missing"],
    [FORBIDDEN, "FORBIDDEN", "api key provided is invalid"],
    [BATCH_LIMIT, "BATCH_LIMIT", "batch size 500 exceeded"],
    [BATCH_LIMIT, "BATCH_LIMIT", "max batch size is 100"],
    [BATCH_LIMIT, "BATCH_LIMIT", "batch response too large"],
    [BATCH_LIMIT, "BATCH_LIMIT", "batch requests are not supported"],
    [BATCH_LIMIT, "BATCH_LIMIT", "batched request not supported"],
    [BATCH_LIMIT, "BATCH_LIMIT", "Batch of more than 100 requests"],
    [ALREADY_KNOWN, "ALREADY_KNOWN", "transaction already in mempool"],
    [ALREADY_KNOWN, "ALREADY_KNOWN", "already exists in mempool"],
    [LAGGING_BACKEND, "LAGGING_BACKEND", "block height is 1234 but requested was 1240"],
    [LOGS_TOO_LARGE, "LOGS_TOO_LARGE", "over the limit of 10485760 bytes (max_response_bytes)"],
    [LOGS_TOO_LARGE, "LOGS_TOO_LARGE", "response too large"],
    [LOGS_TOO_MANY, "LOGS_TOO_MANY", "exceed max results"],
    [LOGS_TOO_MANY, "LOGS_TOO_MANY", "Query yields more than 10000 logs"],
    [LOGS_TOO_MANY, "LOGS_TOO_MANY", "log limit exceeded"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "range of 50000 blocks is too wide"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "Exceed block range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "exceeds the max allowed block range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "max block range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "range limit of 10000 blocks exceeded"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "is limited to a 10,000 blocks range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "are limited to a 5k range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "is limited to a 2000 block range"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "range over 10,000 blocks"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "up to a 10,000 block range"],
    [CALLERS_FAULT, "CALLERS_FAULT", "Execution Reverted"],
    [PERMANENT_UNCLASSIFIED, "PERMANENT_UNCLASSIFIED", "does not support chainid"],
    [PERMANENT_UNCLASSIFIED, "PERMANENT_UNCLASSIFIED", "unauthorized"],
    [METHOD_UNSUPPORTED, "METHOD_UNSUPPORTED", "not available on free plan"],
    [METHOD_UNSUPPORTED, "METHOD_UNSUPPORTED", "not available on your plan"],
    [TRANSIENT_PHRASES, "TRANSIENT_PHRASES", "no available upstream"],
    [INVALID_REQUEST, "INVALID_REQUEST", "invalid parameter"],
    [INVALID_REQUEST, "INVALID_REQUEST", "invalid argument"],
  ])("%s %s: %s", (pattern, _name, phrase) => {
    expect(pattern.test(phrase)).toBe(true);
  });
});

describe("words that name no failure", () => {
  it.each<[RegExp, string, string]>([
    [RATE_LIMIT, "RATE_LIMIT", "a limit of 100 per second applies to this rate card"],
    [BATCH_LIMIT, "BATCH_LIMIT", "batch processed"],
    [LOGS_RANGE_TOO_WIDE, "LOGS_RANGE_TOO_WIDE", "range ok. too large a fee"],
    [FORBIDDEN, "FORBIDDEN", "api key rotated. invalid nonce"],
    [LAGGING_BACKEND, "LAGGING_BACKEND", "block height is high"],
  ])("%s %s: %s", (pattern, _name, phrase) => {
    expect(pattern.test(phrase)).toBe(false);
  });
});
