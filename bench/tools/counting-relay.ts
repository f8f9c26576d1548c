import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP relay that forwards every request to one target as is and shows each exchange (the
 * request's headers and body, the answer's size) to a callback before the answer goes back:
 * how the bench counts, from outside the gateway, the calls that reach the upstream node and
 * the DynamoDB calls a handler makes.
 */
export interface CountingRelay {
  readonly url: string;
  close(): Promise<void>;
}

export interface RelayedExchange {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
  readonly requestBytes: number;
  readonly responseBytes: number;
  /** The answer's body. */
  readonly response: string;
}

export interface RelayOptions {
  /** Changes each request's body before it is forwarded (its length header follows). */
  readonly rewrite?: (body: string, headers: http.IncomingHttpHeaders) => string;
}

export async function startCountingRelay(
  target: string,
  seen: (exchange: RelayedExchange) => void,
  options: RelayOptions = {},
): Promise<CountingRelay> {
  const agent = new http.Agent({ keepAlive: true });
  const upstream = new URL(target);
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const received = Buffer.concat(chunks);
    const body =
      options.rewrite === undefined
        ? received
        : Buffer.from(options.rewrite(received.toString("utf8"), req.headers), "utf8");
    const headers =
      options.rewrite === undefined
        ? req.headers
        : { ...req.headers, "content-length": String(body.length) };
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
        agent,
      },
      (answer) => {
        const parts: Buffer[] = [];
        answer.on("data", (part: Buffer) => parts.push(part));
        answer.on("end", () => {
          const payload = Buffer.concat(parts);
          seen({
            headers: req.headers,
            body: body.toString("utf8"),
            requestBytes: body.length,
            responseBytes: payload.length,
            response: payload.toString("utf8"),
          });
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(payload);
        });
      },
    );
    forward.on("error", (error) => res.writeHead(502).end(String(error)));
    forward.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      agent.destroy();
    },
  };
}
