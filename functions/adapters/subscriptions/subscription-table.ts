import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  type DeleteItemCommandInput,
  type DynamoDBClient,
  GetItemCommand,
  QueryCommand,
  type QueryCommandInput,
  UpdateItemCommand,
  type UpdateItemCommandInput,
} from "@aws-sdk/client-dynamodb";
import type { Item } from "./subscription-items.ts";

/**
 * The commands the subscription store sends (GetItem, Query, UpdateItem, DeleteItem, nothing
 * else: its IAM statement grants these), on the state table, with a condition that fails
 * read as `false` rather than thrown.
 */

export const itemKey = (pk: string, sk: string): Item => ({ pk: { S: pk }, sk: { S: sk } });

type Input<T> = Omit<T, "TableName">;

export class SubscriptionTable {
  readonly #client: DynamoDBClient;
  readonly #name: string;

  constructor(client: DynamoDBClient, tableName: string) {
    this.#client = client;
    this.#name = tableName;
  }

  /** One item, strongly consistent (a write that returned before is in it). */
  async get(pk: string, sk: string): Promise<Item | undefined> {
    const { Item } = await this.#client.send(
      new GetItemCommand({ TableName: this.#name, Key: itemKey(pk, sk), ConsistentRead: true }),
    );
    return Item;
  }

  /** Every page of a Query: each item to `onItem`; the items counted, returned. */
  async query(
    input: Input<Omit<QueryCommandInput, "ExclusiveStartKey">>,
    onItem: (item: Item) => void = () => undefined,
  ): Promise<number> {
    let start: Item | undefined;
    let count = 0;
    do {
      const page = await this.#client.send(
        new QueryCommand({
          TableName: this.#name,
          ...input,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) onItem(item);
      count += page.Count ?? 0;
      // A `Limit` is a bound on the whole read, not on a page.
      start = input.Limit === undefined ? page.LastEvaluatedKey : undefined;
    } while (start !== undefined);
    return count;
  }

  async update(input: Input<UpdateItemCommandInput>): Promise<void> {
    await this.#client.send(new UpdateItemCommand({ TableName: this.#name, ...input }));
  }

  /** A conditional UpdateItem: false when its condition failed. */
  async conditional(input: Input<UpdateItemCommandInput>): Promise<boolean> {
    try {
      await this.update(input);
      return true;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return false;
      throw error;
    }
  }

  /** A DeleteItem: the item it deleted (with `ReturnValues: ALL_OLD`), or null when its condition failed. */
  async delete(input: Input<DeleteItemCommandInput>): Promise<Item | undefined | null> {
    try {
      const { Attributes } = await this.#client.send(
        new DeleteItemCommand({ TableName: this.#name, ...input }),
      );
      return Attributes;
    } catch (error) {
      if (error instanceof ConditionalCheckFailedException) return null;
      throw error;
    }
  }
}
