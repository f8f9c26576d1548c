import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * API Gateway's `@connections` management API as a cost bench needs it: it takes every push
 * (POST `/<stage>/@connections/<id>`, the real SDK client's request) and counts it with its
 * size, as API Gateway bills it (one message per 32 KB), and answers DELETE and GET as a live
 * connection does, without delivering anything: so the follower's own work is what is
 * measured, not the local emulator's sockets.
 */
export interface PushSink {
  readonly url: string;
  /** Pushes taken, their bytes and billed messages, since the last reset. */
  readonly counts: { messages: number; bytes: number; billed: number };
  /** Pushes for each subscription (its id in the notification) since the last reset. */
  readonly bySubscription: Map<string, number>;
  reset(): void;
  close(): Promise<void>;
}

const SUBSCRIPTION = /"subscription":"(0x[0-9a-f]+)"/;

export async function startPushSink(): Promise<PushSink> {
  const counts = { messages: 0, bytes: 0, billed: 0 };
  const bySubscription = new Map<string, number>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const bytes = body.byteLength;
    if (req.method === "POST") {
      const subscription = SUBSCRIPTION.exec(body.toString("utf8"))?.[1] ?? "";
      counts.messages++;
      counts.bytes += bytes;
      counts.billed += Math.max(1, Math.ceil(bytes / 32_768));
      bySubscription.set(subscription, (bySubscription.get(subscription) ?? 0) + 1);
      res.writeHead(200).end();
      return;
    }
    if (req.method === "DELETE") {
      res.writeHead(204).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(
      JSON.stringify({
        ConnectedAt: new Date().toISOString(),
        Identity: { SourceIp: "127.0.0.1" },
      }),
    );
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts,
    bySubscription,
    reset() {
      counts.messages = 0;
      counts.bytes = 0;
      counts.billed = 0;
      bySubscription.clear();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
    },
  };
}
