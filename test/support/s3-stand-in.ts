import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A plain HTTP server standing in for S3, or for a proxy in front of it, that answers as the
 * test scripts it: redirects, error documents, cut-off and trickling bodies, odd encodings.
 * It sends no `Date` header, so the server side keeps no timer of Node's between requests.
 */
export interface S3StandIn {
  readonly endpoint: string;
  /** Every request, as received (path and headers). */
  readonly requests: ReadonlyArray<{
    readonly url: string;
    readonly headers: IncomingMessage["headers"];
  }>;
  /** Answers the next requests with `respond`, from now on. */
  answer(respond: (request: IncomingMessage, response: ServerResponse) => void): void;
  close(): Promise<void>;
}

export async function startS3StandIn(
  respond: (request: IncomingMessage, response: ServerResponse) => void = (_, response) => {
    response.writeHead(404).end();
  },
): Promise<S3StandIn> {
  const requests: Array<{ url: string; headers: IncomingMessage["headers"] }> = [];
  let script = respond;
  const server = createServer((request, response) => {
    requests.push({ url: request.url ?? "", headers: request.headers });
    response.sendDate = false;
    script(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    answer(next) {
      script = next;
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
