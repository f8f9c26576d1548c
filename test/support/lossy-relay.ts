import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A DynamoDB endpoint that loses answers: an HTTP relay to a real one (dynalite, DynamoDB
 * Local) that, for requests a test picks, forwards the request, lets it be made, and then
 * drops the connection instead of answering. The AWS SDK sees a reset socket and sends the
 * request again, as it does in AWS when an answer is lost on the way back.
 */
export interface LossyRelay {
  readonly url: string;
  /** The next `count` requests whose body `matches` are made and their answers lost. */
  lose(matches: (body: string) => boolean, count?: number): void;
  /** Answers lost so far. */
  readonly lost: number;
  close(): Promise<void>;
}

export async function startLossyRelay(target: string): Promise<LossyRelay> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const rules: Array<{ matches: (body: string) => boolean; left: number }> = [];
  let lost = 0;
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const text = body.toString("utf8");
    const rule = rules.find((one) => one.left > 0 && one.matches(text));
    if (rule !== undefined) rule.left--;
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
        const parts: Buffer[] = [];
        answer.on("data", (part: Buffer) => parts.push(part));
        answer.on("end", () => {
          if (rule !== undefined) {
            lost++;
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(parts));
        });
      },
    );
    forward.on("error", () => req.socket.destroy());
    forward.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lose(matches, count = 1) {
      rules.push({ matches, left: count });
    },
    get lost() {
      return lost;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((done) => server.close(() => done()));
      agent.destroy();
    },
  };
}
