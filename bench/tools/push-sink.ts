import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * API Gateway's `@connections` management API as a cost bench needs it, in a process of its
 * own: it takes every push (POST `/<stage>/@connections/<id>`, the real SDK client's request)
 * and counts it with its size, as API Gateway bills it (one message per 32 KB), and answers
 * DELETE and GET as a live connection does, without delivering anything. So the follower's
 * own work is what is measured: neither the local emulator's sockets nor the bench's busy
 * process stand in the pushes' way.
 */

export interface PushCounts {
  readonly messages: number;
  readonly bytes: number;
  readonly billed: number;
  /** Pushes for each subscription (its id in the notification). */
  readonly bySubscription: Readonly<Record<string, number>>;
}

export interface PushSink {
  readonly url: string;
  /** What it took since the last reset. */
  counts(): Promise<PushCounts>;
  reset(): Promise<void>;
  close(): Promise<void>;
}

const SUBSCRIPTION = /"subscription":"(0x[0-9a-f]+)"/;

/** The sink's server, in this process; its counts since `reset`. */
async function serve(): Promise<{ url: string; counts: () => PushCounts; reset: () => void }> {
  let counts = { messages: 0, bytes: 0, billed: 0 };
  let bySubscription: Record<string, number> = {};
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (req.method === "POST") {
      const subscription = SUBSCRIPTION.exec(body.toString("utf8"))?.[1] ?? "";
      counts.messages++;
      counts.bytes += body.byteLength;
      counts.billed += Math.max(1, Math.ceil(body.byteLength / 32_768));
      bySubscription[subscription] = (bySubscription[subscription] ?? 0) + 1;
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
    counts: () => ({ ...counts, bySubscription: { ...bySubscription } }),
    reset: () => {
      counts = { messages: 0, bytes: 0, billed: 0 };
      bySubscription = {};
    },
  };
}

type Request = { readonly id: number; readonly ask: "counts" | "reset" };

/** Starts the sink in a child process. */
export async function startPushSink(): Promise<PushSink> {
  const child: ChildProcess = fork(import.meta.filename, ["--serve"], { stdio: "ignore" });
  const [ready] = (await once(child, "message")) as [{ url: string }];
  let asked = 0;
  const ask = <T>(what: Request["ask"]): Promise<T> =>
    new Promise((resolve) => {
      const id = ++asked;
      const onMessage = (message: { id?: number; answer?: T }) => {
        if (message.id !== id) return;
        child.off("message", onMessage);
        resolve(message.answer as T);
      };
      child.on("message", onMessage);
      child.send({ id, ask: what } satisfies Request);
    });
  return {
    url: ready.url,
    counts: () => ask<PushCounts>("counts"),
    reset: () => ask<void>("reset"),
    close: async () => {
      child.kill();
      await once(child, "exit").catch(() => undefined);
    },
  };
}

if (process.argv.includes("--serve") && process.send !== undefined) {
  const sink = await serve();
  process.on("message", (message: Request) => {
    const answer = message.ask === "counts" ? sink.counts() : sink.reset();
    process.send?.({ id: message.id, answer });
  });
  process.send({ url: sink.url });
}
