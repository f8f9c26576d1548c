import type { GatewayModel } from "../config/network-model.ts";

/**
 * Whether the API key a connection was opened with still serves it under the config in force
 * (docs/behaviour.md §15.3): with keys configured, its key's name must still be listed, under
 * the hash it had at the connect (a rotated key no longer serves what the old one opened). The
 * socket drops a connection whose key no longer serves it at its next message; the head
 * follower delivers nothing to a subscription whose key no longer serves it, so a connection
 * that stays silent after its key was rotated or removed is not streamed to either.
 */
export function keyStillServes(
  holder: { readonly caller: string; readonly keySha256?: string },
  apiKeys: GatewayModel["apiKeys"],
): boolean {
  if (apiKeys.length === 0) return true;
  const key = apiKeys.find((entry) => entry.name === holder.caller);
  if (key === undefined) return false;
  return holder.keySha256 === undefined || key.sha256 === holder.keySha256;
}
