import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDynamoClient } from "../../../../functions/adapters/store/state-store.ts";
import { DynamoTransactionLedger } from "../../../../functions/adapters/store/transaction-ledger.ts";
import type { TransactionLedger } from "../../../../functions/core/ports.ts";
import { isJavaAvailable, type LocalDynamoDb, startDynalite } from "../../../../local/dynamodb.ts";
import { MemoryTransactionLedger } from "../../../support/memory-ledger.ts";
import { startSharedDynamoDbLocal } from "../../../support/shared-dynamodb-local.ts";

/**
 * The transaction ledger's contract (docs/behaviour.md §4.12), run against the DynamoDB
 * adapter on the real DynamoDB API (dynalite: no item on a failed condition, so the adapter
 * reads it; DynamoDB Local where Java is present: the item comes back with the failure) and
 * against the in-memory ledger the pipeline's unit tests use.
 */

interface Backend {
  readonly ledger: TransactionLedger;
  close(): Promise<void>;
}

async function dynamoBackend(start: () => Promise<LocalDynamoDb>): Promise<Backend> {
  const dynamo = await start();
  return {
    ledger: new DynamoTransactionLedger({
      client: createDynamoClient({ endpoint: dynamo.endpoint }),
      tableName: dynamo.tableName,
    }),
    close: () => dynamo.close(),
  };
}

const backends: Array<[string, () => Promise<Backend>, boolean]> = [
  ["memory", async () => ({ ledger: new MemoryTransactionLedger(), close: async () => {} }), false],
  ["dynalite", () => dynamoBackend(() => startDynalite({ tableName: "ledger" })), false],
  [
    "DynamoDB Local",
    () => dynamoBackend(() => startSharedDynamoDbLocal({ tableName: "ledger" })),
    !isJavaAvailable(),
  ],
];

const HASH = `0x${"ab".repeat(32)}`;
const REFUSAL = '{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"insufficient funds"}}';

describe.each(backends)("transaction ledger on %s", (_name, start, skip) => {
  let backend: Backend;
  beforeAll(async () => {
    if (!skip) backend = await start();
  }, 60_000);
  afterAll(async () => backend?.close());

  it.skipIf(skip)("the first claim wins; the next one sees it sending since then", async () => {
    expect(await backend.ledger.claim("one", HASH, 1_000)).toBeNull();
    expect(await backend.ledger.claim("one", HASH, 2_000)).toEqual({
      status: "sending",
      at: 1_000,
    });
  });

  it.skipIf(skip)("hashes are per network", async () => {
    expect(await backend.ledger.claim("two", HASH, 1_000)).toBeNull();
  });

  it.skipIf(skip)(
    "a refusal is kept with its answer, and a later acceptance replaces it",
    async () => {
      await backend.ledger.claim("three", HASH, 1_000);
      await backend.ledger.settle("three", HASH, { status: "refused", answer: REFUSAL });
      expect(await backend.ledger.claim("three", HASH, 2_000)).toEqual({
        status: "refused",
        answer: REFUSAL,
      });
      await backend.ledger.settle("three", HASH, { status: "accepted" });
      expect(await backend.ledger.claim("three", HASH, 3_000)).toEqual({ status: "accepted" });
    },
  );

  it.skipIf(skip)("accepted is final: a later refusal never overwrites it", async () => {
    await backend.ledger.claim("four", HASH, 1_000);
    await backend.ledger.settle("four", HASH, { status: "accepted" });
    await backend.ledger.settle("four", HASH, { status: "refused", answer: REFUSAL });
    expect(await backend.ledger.claim("four", HASH, 2_000)).toEqual({ status: "accepted" });
  });

  it.skipIf(skip)("concurrent claims: exactly one gets null", async () => {
    const claims = await Promise.all(
      Array.from({ length: 8 }, (_, index) => backend.ledger.claim("five", HASH, index)),
    );
    expect(claims.filter((claim) => claim === null)).toHaveLength(1);
  });
});
