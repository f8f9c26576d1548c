import { createHook } from "node:async_hooks";
import type { IncomingMessage, ServerResponse } from "node:http";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import {
  createS3ObjectReader,
  S3ObjectNotText,
  type S3ObjectReader,
} from "../../../../functions/adapters/config/s3-object.ts";
import { type S3StandIn, startS3StandIn } from "../../../support/s3-stand-in.ts";

/**
 * The signed GET of the config object against an S3 that misbehaves on purpose, or a proxy in
 * front of it: what comes back is an answer or an error that names the fault, within the
 * read's timeout, with nothing of the request's secrets in it and nothing left running after.
 */

const SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN/0123456789+abcdef==";
const credentials = async () => ({
  accessKeyId: "AKIDEXAMPLE",
  secretAccessKey: SECRET_ACCESS_KEY,
  sessionToken: SESSION_TOKEN,
});

let standIn: S3StandIn | undefined;
afterEach(async () => {
  await standIn?.close();
  standIn = undefined;
});

async function readerFor(
  respond: (request: IncomingMessage, response: ServerResponse) => void,
  key = "config/dev.json",
): Promise<S3ObjectReader> {
  standIn = await startS3StandIn(respond);
  return createS3ObjectReader(
    { bucket: "b", key, region: "us-east-1", endpoint: standIn.endpoint },
    credentials,
  );
}

const failureOf = (read: Promise<unknown>): Promise<Error> =>
  read.then(
    () => {
      throw new Error("the read succeeded");
    },
    (error: Error) => error,
  );

describe("answers S3 or a proxy should not give", () => {
  it("regression: a 304 to a GET without If-None-Match was taken as 'unchanged' (a cold start then used its bundled copy with no error); now it is an error", async () => {
    const reader = await readerFor((_, response) => response.writeHead(304).end());
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toMatchObject({
      name: "Http304",
      message: "HTTP 304 to a GET without If-None-Match",
    });
  });

  it("still takes a 304 to If-None-Match as unchanged", async () => {
    const reader = await readerFor((_, response) => response.writeHead(304).end());
    expect(await reader.get({ ifNoneMatch: '"a"', timeoutMs: 2000 })).toBe("unchanged");
  });

  it("reads a 200 without an ETag, with an empty one", async () => {
    const reader = await readerFor((_, response) => response.writeHead(200).end("{}"));
    expect(await reader.get({ timeoutMs: 2000 })).toEqual({ text: "{}", etag: "" });
  });

  it("reads an empty 200 as an empty document (the config source rejects it as invalid JSON)", async () => {
    const reader = await readerFor((_, response) => response.writeHead(200, { etag: '"e"' }).end());
    expect(await reader.get({ timeoutMs: 2000 })).toEqual({ text: "", etag: '"e"' });
  });

  it("regression: a body that is not UTF-8 was read with its bad bytes replaced, so a config could load with them changed; now it is a document that is no text, with its ETag", async () => {
    const reader = await readerFor((_, response) => {
      response
        .writeHead(200, { etag: '"l"' })
        .end(Buffer.from('{"networks":{"caf\xe9":{}}}', "latin1"));
    });
    const failure = await failureOf(reader.get({ timeoutMs: 2000 }));
    expect(failure).toBeInstanceOf(S3ObjectNotText);
    expect(failure).toMatchObject({
      name: "NotText",
      message: "the object is not UTF-8 text: not a gateway config",
      etag: '"l"',
    });
  });

  it("keeps a UTF-8 byte-order mark for the config parser, which skips it (so the document is not taken for the one prepared at build time)", async () => {
    const reader = await readerFor((_, response) => {
      response.writeHead(200, { etag: '"b"' }).end(`\uFEFF{"a":"€"}`);
    });
    expect(await reader.get({ timeoutMs: 2000 })).toEqual({
      text: '\uFEFF{"a":"€"}',
      etag: '"b"',
    });
  });

  it.each([
    ["gzip", gzipSync],
    ["x-gzip", gzipSync],
    ["deflate", deflateSync],
    ["br", brotliCompressSync],
  ])(
    "regression: an object stored with Content-Encoding %s was handed on compressed; now it is decoded",
    async (encoding, compress) => {
      const reader = await readerFor((_, response) => {
        response
          .writeHead(200, { etag: '"z"', "content-encoding": encoding })
          .end(compress(Buffer.from('{"networks":{}}')));
      });
      expect(await reader.get({ timeoutMs: 2000 })).toEqual({
        text: '{"networks":{}}',
        etag: '"z"',
      });
    },
  );

  it.each([
    ["corrupt gzip", "gzip", Buffer.from("not gzip at all"), /gzip encoding is corrupt/],
    [
      "gzip that inflates past 8 MB",
      "gzip",
      gzipSync(Buffer.alloc(9 * 1024 * 1024, 0x20)),
      /gzip encoding is over 8388608 bytes/,
    ],
    ["an encoding it does not know", "compress", Buffer.from("{}"), /Content-Encoding compress/],
  ])("fails on %s", async (_, encoding, body, error) => {
    const reader = await readerFor((_request, response) => {
      response.writeHead(200, { etag: '"z"', "content-encoding": encoding }).end(body);
    });
    await expect(reader.get({ timeoutMs: 5000 })).rejects.toThrow(error);
  });

  it.each([
    [
      "301 PermanentRedirect",
      (response: ServerResponse) =>
        response
          .writeHead(301, { "content-type": "application/xml" })
          .end(
            "<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message><Endpoint>b.s3.eu-west-1.amazonaws.com</Endpoint></Error>",
          ),
      {
        name: "PermanentRedirect",
        status: 301,
        message:
          "The bucket you are attempting to access must be addressed using the specified endpoint.",
      },
    ],
    [
      "307 with a Location and no body (not followed)",
      (response: ServerResponse) =>
        response.writeHead(307, { location: "http://169.254.169.254/latest/meta-data/" }).end(),
      { name: "Http307", status: 307, message: "HTTP 307 from S3" },
    ],
    [
      "403 ExpiredToken",
      (response: ServerResponse) =>
        response
          .writeHead(403)
          .end(
            "<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>",
          ),
      { name: "ExpiredToken", status: 403, message: "The provided token has expired." },
    ],
    [
      "206 Partial Content",
      (response: ServerResponse) => response.writeHead(206, { etag: '"p"' }).end("{"),
      { name: "Http206", status: 206 },
    ],
    [
      "an error code holding markup and a message holding control characters",
      (response: ServerResponse) =>
        response
          .writeHead(403)
          .end(
            "<Error><Code>Access<b>Denied</b></Code><Message>line\nbreak\u0000and\tmore</Message></Error>",
          ),
      { name: "Http403", status: 403, message: "line break and more" },
    ],
  ])("names %s", async (_, respond, error) => {
    const reader = await readerFor((_request, response) => respond(response));
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toMatchObject(error);
  });

  it("regression: an error document echoing the request's Authorization header and session token put them in the error (and so the logs); now they are redacted", async () => {
    const reader = await readerFor((request, response) => {
      const authorization = request.headers.authorization ?? "";
      const token = request.headers["x-amz-security-token"];
      const signature = /Signature=(\w+)/.exec(authorization)?.[1];
      response
        .writeHead(403)
        .end(
          `<Error><Code>${signature}</Code><Message>token ${token} sent ${authorization} signed ${signature}</Message></Error>`,
        );
    });
    const error = await failureOf(reader.get({ timeoutMs: 2000 }));
    const text = `${error.name}: ${error.message}`;
    expect(text).toMatch(/^Http403: token \[redacted\] sent \[redacted\] signed \[redacted\]$/);
    expect(text).not.toContain(SESSION_TOKEN);
    expect(text).not.toContain("Signature=");
    expect(text).not.toContain(SECRET_ACCESS_KEY);
  });

  it("regression: a 10 MB error document was read up to the 8 MB object limit and reported as 'not a gateway config'; now its first bytes name it", async () => {
    const reader = await readerFor((_, response) => {
      response.writeHead(403);
      response.write("<Error><Code>AccessDenied</Code><Message>");
      const chunk = "m".repeat(1024 * 1024);
      for (let i = 0; i < 10; i++) response.write(chunk);
      response.end("</Message></Error>");
    });
    await expect(reader.get({ timeoutMs: 5000 })).rejects.toMatchObject({
      name: "AccessDenied",
      status: 403,
      message: "HTTP 403 from S3",
    });
  });

  it.each([
    ["a reset mid-body", (response: ServerResponse) => response.socket?.resetAndDestroy()],
    ["a close before Content-Length", (response: ServerResponse) => response.socket?.destroy()],
  ])("names a body cut off by %s", async (_, cut) => {
    const reader = await readerFor((_request, response) => {
      response.writeHead(200, { etag: '"c"', "content-length": "1000" });
      response.write("x".repeat(500), () => cut(response));
    });
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toThrow(/^S3's answer was cut off: /);
  });

  it("fails on headers over Node's limit instead of reading them", async () => {
    const reader = await readerFor((_, response) => {
      response.writeHead(200, { etag: '"h"', "x-big": "a".repeat(100_000) }).end("{}");
    });
    await expect(reader.get({ timeoutMs: 2000 })).rejects.toThrow(/Header overflow/);
  });
});

describe("the timeout bounds the whole read", () => {
  it("regression: credentials that never came (a metadata service that does not answer) held the read past its timeout; now the read fails at it", async () => {
    standIn = await startS3StandIn();
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint: standIn.endpoint },
      () => new Promise(() => undefined),
    );
    await expect(reader.get({ timeoutMs: 100 })).rejects.toMatchObject({ name: "TimeoutError" });
    expect(standIn.requests).toEqual([]);
  });

  it("a late failure of the credential chain after the timeout is nobody's (no unhandled rejection)", async () => {
    standIn = await startS3StandIn();
    let fail: (error: Error) => void = () => undefined;
    const reader = createS3ObjectReader(
      { bucket: "b", key: "k", region: "us-east-1", endpoint: standIn.endpoint },
      () =>
        new Promise((_, reject) => {
          fail = reject;
        }),
    );
    await expect(reader.get({ timeoutMs: 50 })).rejects.toMatchObject({ name: "TimeoutError" });
    fail(new Error("Could not load credentials from any providers"));
    // Vitest fails the run on an unhandled rejection; give it a turn to surface.
    await new Promise((resolve) => setImmediate(resolve));
  });

  it.each([
    [
      "a body trickling one byte at a time",
      (response: ServerResponse) => {
        response.writeHead(200, { etag: '"s"', "content-length": "100" });
        const drip = setInterval(() => response.write("x"), 20);
        response.on("close", () => clearInterval(drip));
      },
    ],
    [
      "headers trickling one line at a time",
      (response: ServerResponse) => {
        const socket = response.socket;
        socket?.write("HTTP/1.1 200 OK\r\n");
        const drip = setInterval(() => socket?.write("x-drip: 1\r\n"), 20);
        socket?.on("close", () => clearInterval(drip));
      },
    ],
  ])("%s is cut at the timeout, not at its end", async (_, respond) => {
    const reader = await readerFor((_request, response) => respond(response));
    const started = performance.now();
    await expect(reader.get({ timeoutMs: 300 })).rejects.toMatchObject({
      name: "TimeoutError",
      message: "no complete answer from S3 within 300 ms",
    });
    // The trickle would take 2 s to finish.
    expect(performance.now() - started).toBeLessThan(1500);
  });
});

describe("what a read leaves behind (a Lambda freezes between invocations)", () => {
  /**
   * Timers and TCP sockets of the reader (created by it or by Node's HTTP client for it) while
   * `run` runs, that still exist shortly after: the test runner's own timers are not counted.
   */
  async function leftBehind(run: () => Promise<unknown>): Promise<string[]> {
    const live = new Map<number, string>();
    let watching = true;
    const hook = createHook({
      init(id, type) {
        if (!watching || (type !== "Timeout" && type !== "TCPWRAP")) return;
        const limit = Error.stackTraceLimit;
        Error.stackTraceLimit = 50;
        const stack = new Error().stack ?? "";
        Error.stackTraceLimit = limit;
        if (/s3-object\.ts|node:_http_client|node:_http_agent/.test(stack)) live.set(id, type);
      },
      destroy(id) {
        live.delete(id);
      },
    });
    hook.enable();
    try {
      await run().catch(() => undefined);
      watching = false;
      // Closing sockets and cleared timers are destroyed within a few turns.
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      hook.disable();
    }
    return [...live.values()];
  }

  it("regression: a read left its timeout's timer and a keep-alive socket (with its idle timer) behind; now nothing outlives it", async () => {
    const reader = await readerFor((_, response) => {
      response.writeHead(200, { etag: '"a"' }).end("{}");
    });
    expect(await leftBehind(() => reader.get({ timeoutMs: 5000 }))).toEqual([]);
  });

  it.each([
    ["a timed-out read", (_: ServerResponse) => undefined],
    ["a failed read", (response: ServerResponse) => response.writeHead(500).end()],
  ])("%s leaves nothing behind", async (_, respond) => {
    const reader = await readerFor((_request, response) => respond(response));
    expect(await leftBehind(() => reader.get({ timeoutMs: 100 }))).toEqual([]);
  });
});

describe("keys as S3 spells them", () => {
  it.each([
    ["a?b.json", "/b/a%3Fb.json"],
    ["a#b.json", "/b/a%23b.json"],
    ["a%b.json", "/b/a%25b.json"],
    ["a+b.json", "/b/a%2Bb.json"],
    ["a//b.json", "/b/a//b.json"],
    ["/leading.json", "/b//leading.json"],
    ["ünï/€.json", "/b/%C3%BCn%C3%AF/%E2%82%AC.json"],
    ["regression: a/../b.json (was sent as /b/b.json, another object)", "/b/a/../b.json"],
    ["regression: ./x.json (was sent as /b/x.json)", "/b/./x.json"],
  ])("sends %s as %s", async (key, path) => {
    const reader = await readerFor(
      (_, response) => response.writeHead(200, { etag: '"k"' }).end("{}"),
      key.replace(/^regression: (\S+) .*$/, "$1"),
    );
    await reader.get({ timeoutMs: 2000 });
    expect(standIn?.requests.map((request) => request.url)).toEqual([path]);
  });
});
