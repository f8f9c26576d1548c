import type { ConnectionRecord } from "../../core/subscriptions/subscription-records.ts";
import { names, num, slotKey, slotPartition, ttlOf } from "./subscription-items.ts";
import { itemKey, type SubscriptionTable } from "./subscription-table.ts";

/**
 * An API key's connection slots (`WSCONN#<network>#<caller>` / `<slot>`, as filters take
 * slots in `filter-store.ts`): a connect reads the key's slots and takes a free or expired one
 * with a conditional write, so a key never holds more than its bound across containers, and a
 * slot whose connection never said goodbye frees itself when it expires.
 */

/** Rounds of a reservation: each reads the slots in use and tries a free one. */
const SLOT_ROUNDS = 5;

/** A free slot of the connection's key, taken for it; null when the key holds `max` live ones. */
export async function takeSlot(
  table: SubscriptionTable,
  network: string,
  connection: ConnectionRecord,
  max: number,
  now: number,
): Promise<number | null> {
  const pk = slotPartition(network, connection.caller);
  for (let round = 0; round < SLOT_ROUNDS; round++) {
    const live = new Set<number>();
    await table.query(
      {
        KeyConditionExpression: "pk = :pk",
        ProjectionExpression: "sk, #expires",
        ExpressionAttributeNames: names("#expires"),
        ExpressionAttributeValues: { ":pk": { S: pk } },
        ConsistentRead: true,
      },
      (item) => {
        const slot = Number.parseInt(item.sk?.S ?? "", 16);
        if (Number.isInteger(slot) && num(item, "expires_at") > now) live.add(slot);
      },
    );
    if (live.size >= max) return null;
    // Racing connects take the `round`-th free slot, so a lost race tries another.
    const free = Array.from({ length: max }, (_, slot) => slot).filter((slot) => !live.has(slot));
    const slot = free[Math.min(round, free.length - 1)];
    if (slot === undefined) return null;
    const taken = await table.conditional({
      Key: itemKey(pk, slotKey(slot)),
      UpdateExpression: "SET #connection = :connection, #expires = :expires, #ttl = :ttl",
      ConditionExpression: "attribute_not_exists(sk) OR #expires <= :now",
      ExpressionAttributeNames: names("#connection", "#expires", "#ttl"),
      ExpressionAttributeValues: {
        ":connection": { S: connection.id },
        ":expires": { N: String(connection.expiresAt) },
        ":ttl": { N: ttlOf(connection.expiresAt) },
        ":now": { N: String(now) },
      },
    });
    if (taken) return slot;
  }
  throw new Error(
    `connection slots of "${connection.caller}" on ${network} are contended: try again`,
  );
}

/** Frees the slot, when this connection still holds it (another may, once this one's expired). */
export async function releaseSlot(
  table: SubscriptionTable,
  network: string,
  caller: string,
  slot: number,
  connectionId: string,
): Promise<void> {
  await table.delete({
    Key: itemKey(slotPartition(network, caller), slotKey(slot)),
    ConditionExpression: "#connection = :connection",
    ExpressionAttributeNames: names("#connection"),
    ExpressionAttributeValues: { ":connection": { S: connectionId } },
  });
}
