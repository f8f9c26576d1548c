import { randomFillSync } from "node:crypto";

/**
 * Random identifiers for every request, drawn from a pool of random bytes refilled in one call
 * when used up: a randomUUID per identifier, formatted and then cut, cost about a microsecond
 * each under load.
 */
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

function take(bytes: number): number {
  if (used + bytes > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const start = used;
  used += bytes;
  return start;
}

/** An HTTP API request id as API Gateway writes it (`apigw-requestid`): 11 random bytes, base64. */
export function apiRequestId(): string {
  const start = take(11);
  return pool.toString("base64", start, start + 11);
}

/** `count` random hex digits (`count` even). */
export function randomHex(count: number): string {
  const start = take(count / 2);
  return pool.toString("hex", start, start + count / 2);
}
