import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP relay that forwards every request to one target as is and shows each request (its
 * headers and body) to a callback before forwarding: how the replay counts the calls that
 * reach the upstream node and the DynamoDB calls the gateway makes, from outside the gateway.
 */
export interface CountingRelay {
  readonly url: string;
  close(): Promise<void>;
}

export async function startCountingRelay(
  target: string,
  seen: (request: { readonly headers: http.IncomingHttpHeaders; readonly body: string }) => void,
): Promise<CountingRelay> {
  const agent = new http.Agent({ keepAlive: true });
  const upstream = new URL(target);
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    seen({ headers: req.headers, body: body.toString("utf8") });
    const forward = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: req.headers,
        agent,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
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
