import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP server that answers every request to `/<name>` with the answer recorded under that
 * name (status, body, content type), the caller's ids put in: a lone answer takes the
 * request's id unless it carried none (null), a batch answer's members take the ids of the
 * request's members in order. After `thenAnswer` is set, every request but the first to a name
 * gets that result instead (a retry that succeeds). Requests and their bodies are kept by name.
 */

export interface RecordedAnswer {
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
}

export interface ReplayServer {
  readonly url: string;
  record(name: string, answer: RecordedAnswer, thenAnswer?: unknown): void;
  /** The bodies of the requests to `/<name>`, in order. */
  requests(name: string): readonly string[];
  close(): Promise<void>;
}

interface Member {
  id?: unknown;
}

export async function startReplayServer(): Promise<ReplayServer> {
  const answers = new Map<string, { answer: RecordedAnswer; thenAnswer: unknown }>();
  const received = new Map<string, string[]>();
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const name = (req.url ?? "/").slice(1);
    const seen = received.get(name) ?? [];
    seen.push(body);
    received.set(name, seen);
    const recorded = answers.get(name);
    if (recorded === undefined) {
      res.writeHead(404).end();
      return;
    }
    const request = parse(body) as Member | Member[] | undefined;
    const text =
      seen.length > 1 && recorded.thenAnswer !== undefined
        ? JSON.stringify(withIds({ jsonrpc: "2.0", id: 0, result: recorded.thenAnswer }, request))
        : replayed(recorded.answer.body, request);
    res.writeHead(
      seen.length > 1 && recorded.thenAnswer !== undefined ? 200 : recorded.answer.status,
      {
        "content-type": recorded.answer.contentType ?? "application/json",
        "content-length": Buffer.byteLength(text),
      },
    );
    res.end(text);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    record: (name, answer, thenAnswer) => answers.set(name, { answer, thenAnswer }),
    requests: (name) => received.get(name) ?? [],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function replayed(body: string, request: Member | Member[] | undefined): string {
  const answer = parse(body);
  if (answer === undefined) return body;
  return JSON.stringify(withIds(answer, request));
}

function withIds(answer: unknown, request: Member | Member[] | undefined): unknown {
  if (Array.isArray(answer)) {
    const members = Array.isArray(request) ? request : [request];
    return answer.map((member: Member, index) => ({ ...member, id: members[index]?.id ?? null }));
  }
  if (typeof answer !== "object" || answer === null || !("jsonrpc" in answer)) return answer;
  const member = answer as Member;
  if (member.id === null) return answer;
  const id = Array.isArray(request) ? request[0]?.id : request?.id;
  return { ...member, id: id ?? null };
}

function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
