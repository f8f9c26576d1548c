import { names, num, SUBSCRIPTION_SK_PREFIX, subscriptionPartition } from "./subscription-items.ts";
import { itemKey, type SubscriptionTable } from "./subscription-table.ts";

/**
 * How many subscriptions an API key and a network hold (`WSSUB#<network>` / `KEY#<caller>` and
 * `/ COUNT`): one more only below the bound (an `ADD` conditional on it), one less only by the
 * removal that deleted the item. Without transactions a container that dies between two writes
 * can leave a counter ahead of its items; then a refusal counts the items again, at most once a
 * `RECOUNT_MS` per counter, and sets it right, so no bound stays used up by what is not there.
 */

/** How often a counter that refuses may be checked against its items (a Query of them). */
export const RECOUNT_MS = 60_000;

/**
 * Counts one more at `pk`/`sk`, unless the counter is at `max`. A counter at `max` not counted
 * from the items for `RECOUNT_MS` is counted again first (`items`, which include the
 * subscription being counted, written before).
 */
export async function countUp(
  table: SubscriptionTable,
  pk: string,
  sk: string,
  max: number,
  now: number,
  items: () => Promise<number>,
): Promise<boolean> {
  const add = () =>
    table.conditional({
      Key: itemKey(pk, sk),
      UpdateExpression: "ADD #n :one",
      ConditionExpression: "attribute_not_exists(#n) OR #n < :max",
      ExpressionAttributeNames: names("#n"),
      ExpressionAttributeValues: { ":one": { N: "1" }, ":max": { N: String(max) } },
    });
  if (await add()) return true;
  const counter = await table.get(pk, sk);
  if (counter === undefined || now - num(counter, "counted_at") < RECOUNT_MS) return false;
  const actual = (await items()) - 1;
  const seen = num(counter, "n");
  if (actual >= seen) {
    // Right after all: only the time of the count moves.
    await table.update({
      Key: itemKey(pk, sk),
      UpdateExpression: "SET #counted = :now",
      ExpressionAttributeNames: names("#counted"),
      ExpressionAttributeValues: { ":now": { N: String(now) } },
    });
    return false;
  }
  const set = await table.conditional({
    Key: itemKey(pk, sk),
    UpdateExpression: "SET #n = :actual, #counted = :now",
    ConditionExpression: "#n = :seen",
    ExpressionAttributeNames: names("#n", "#counted"),
    ExpressionAttributeValues: {
      ":actual": { N: String(Math.max(0, actual)) },
      ":now": { N: String(now) },
      ":seen": { N: String(seen) },
    },
  });
  return set && (await add());
}

export async function countDown(table: SubscriptionTable, pk: string, sk: string): Promise<void> {
  await table.conditional({
    Key: itemKey(pk, sk),
    UpdateExpression: "ADD #n :minus",
    ConditionExpression: "#n > :zero",
    ExpressionAttributeNames: names("#n"),
    ExpressionAttributeValues: { ":minus": { N: "-1" }, ":zero": { N: "0" } },
  });
}

/** The network's subscription items (of `caller` only, when given), expired ones too. */
export function countItems(
  table: SubscriptionTable,
  network: string,
  caller: string | null,
): Promise<number> {
  return table.query({
    KeyConditionExpression: "pk = :pk AND begins_with(sk, :prefix)",
    ...(caller === null
      ? {}
      : { FilterExpression: "#caller = :caller", ExpressionAttributeNames: names("#caller") }),
    ExpressionAttributeValues: {
      ":pk": { S: subscriptionPartition(network) },
      ":prefix": { S: SUBSCRIPTION_SK_PREFIX },
      ...(caller === null ? {} : { ":caller": { S: caller } }),
    },
    Select: "COUNT",
    ConsistentRead: true,
  });
}
