import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A DynamoDB endpoint in front of dynalite for fault tests: it passes every call through,
 * throttles every call (DynamoDB's own ThrottlingException), or vanishes (connections reset);
 * `loseAnswers` lets the next calls of one operation through to dynalite and then resets the
 * connection instead of answering (a write that landed while its answer was lost: the SDK
 * sends it again).
 */
export type DynamoMode = "pass" | "throttle" | "down";

export interface DynamoFront {
  readonly endpoint: string;
  setMode(mode: DynamoMode): void;
  /** The next `count` calls of `operation` (e.g. "UpdateItem") land, and their answers are lost. */
  loseAnswers(operation: string, count?: number): void;
  close(): Promise<void>;
}

export async function startDynamoFront(target: string): Promise<DynamoFront> {
  let mode: DynamoMode = "pass";
  const lost = new Map<string, number>();
  const handleRequest = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    if (mode === "down") {
      req.socket.destroy();
      return;
    }
    if (mode === "throttle") {
      res.writeHead(400, { "content-type": "application/x-amz-json-1.0" });
      res.end(
        JSON.stringify({
          __type: "com.amazonaws.dynamodb.v20120810#ThrottlingException",
          message: "Rate of requests exceeds the allowed throughput.",
        }),
      );
      return;
    }
    const upstream = await fetch(target, {
      method: "POST",
      headers: Object.fromEntries(
        Object.entries(req.headers).filter(
          ([name]) =>
            name.startsWith("x-amz") || name === "content-type" || name === "authorization",
        ),
      ) as Record<string, string>,
      body: Buffer.concat(chunks),
    });
    const operation = String(req.headers["x-amz-target"] ?? "").split(".")[1] ?? "";
    const losing = lost.get(operation) ?? 0;
    if (losing > 0) {
      lost.set(operation, losing - 1);
      await upstream.arrayBuffer();
      req.socket.destroy();
      return;
    }
    res.writeHead(upstream.status, {
      "content-type": upstream.headers.get("content-type") ?? "application/x-amz-json-1.0",
    });
    res.end(Buffer.from(await upstream.arrayBuffer()));
  };
  // dynalite gone mid-call (the suite tearing down): the caller sees the connection drop, as
  // from a DynamoDB endpoint that vanished, and the test process no unhandled rejection.
  const server: Server = createServer((req, res) => {
    handleRequest(req, res).catch(() => req.socket.destroy());
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setMode(next) {
      mode = next;
      if (next === "down") server.closeAllConnections();
    },
    loseAnswers(operation, count = 1) {
      lost.set(operation, count);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
