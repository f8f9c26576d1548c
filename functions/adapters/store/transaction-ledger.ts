import {
  type AttributeValue,
  ConditionalCheckFailedException,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from "@aws-sdk/client-dynamodb";
import type { LedgerEntry, TransactionLedger } from "../../core/ports.ts";

/**
 * The transaction ledger in DynamoDB: `TX#<network>` / `<hash>` with `status`
 * (`sending` | `accepted` | `refused`), `at`, the refused `answer`, and a TTL of a day. Its own
 * partition, so the proxy's state Query never reads it; only UpdateItem (the claim is
 * conditional on the item not existing, and returns the existing item when it does).
 */

/** A sent transaction is settled or dropped from mempools well within a day. */
const TTL_SECONDS = 86_400;

type Item = Record<string, AttributeValue>;

export const ledgerKey = (network: string, hash: string): Item => ({
  pk: { S: `TX#${network}` },
  sk: { S: hash },
});

function entryOf(item: Item): LedgerEntry | null {
  switch (item.status?.S) {
    case "sending":
      return { status: "sending", at: Number(item.at?.N ?? 0) };
    case "accepted":
      return { status: "accepted" };
    case "refused":
      return { status: "refused", answer: item.answer?.S ?? "" };
    default:
      return null;
  }
}

export class DynamoTransactionLedger implements TransactionLedger {
  readonly #client: DynamoDBClient;
  readonly #table: string;

  constructor(options: { client: DynamoDBClient; tableName: string }) {
    this.#client = options.client;
    this.#table = options.tableName;
  }

  async claim(network: string, hash: string, at: number): Promise<LedgerEntry | null> {
    try {
      await this.#client.send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: ledgerKey(network, hash),
          UpdateExpression: "SET #status = :sending, #at = :at, #ttl = :ttl",
          ConditionExpression: "attribute_not_exists(#status)",
          ExpressionAttributeNames: { "#status": "status", "#at": "at", "#ttl": "ttl" },
          ExpressionAttributeValues: {
            ":sending": { S: "sending" },
            ":at": { N: String(at) },
            ":ttl": { N: String(Math.ceil(at / 1000) + TTL_SECONDS) },
          },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
      return null;
    } catch (error) {
      if (!(error instanceof ConditionalCheckFailedException)) throw error;
      // DynamoDB hands back the existing item; an emulator that does not is asked for it.
      if (error.Item) return entryOf(error.Item);
      const stored = await this.#client.send(
        new GetItemCommand({
          TableName: this.#table,
          Key: ledgerKey(network, hash),
          ConsistentRead: true,
        }),
      );
      return stored.Item ? entryOf(stored.Item) : null;
    }
  }

  async settle(network: string, hash: string, outcome: LedgerEntry): Promise<void> {
    await this.#client
      .send(
        new UpdateItemCommand({
          TableName: this.#table,
          Key: ledgerKey(network, hash),
          UpdateExpression:
            outcome.status === "refused"
              ? "SET #status = :status, answer = :answer"
              : "SET #status = :status REMOVE answer",
          // Accepted is final: a later sender's refusal (a duplicate) never overwrites it.
          ConditionExpression: "attribute_not_exists(#status) OR #status <> :accepted",
          ExpressionAttributeNames: { "#status": "status" },
          ExpressionAttributeValues: {
            ":status": { S: outcome.status },
            ":accepted": { S: "accepted" },
            ...(outcome.status === "refused" ? { ":answer": { S: outcome.answer } } : {}),
          },
        }),
      )
      .catch((error: unknown) => {
        if (!(error instanceof ConditionalCheckFailedException)) throw error;
      });
  }
}
