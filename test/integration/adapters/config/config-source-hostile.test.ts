import type { ServerResponse } from "node:http";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ConfigSourceEvent,
  createConfigSource,
} from "../../../../functions/adapters/config/config-source.ts";
import { createS3ObjectReader } from "../../../../functions/adapters/config/s3-object.ts";
import { type S3StandIn, startS3StandIn } from "../../../support/s3-stand-in.ts";

/**
 * The config source's refresh against an S3 stand-in that fails in every way the reader
 * names: the last good config stays in force, each failed check is reported once, nothing
 * throws, and a check that cannot finish is bounded by the request timeout.
 */

const REFRESH_MS = 30_000;
const SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const SESSION_TOKEN = "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN/0123456789+abcdef==";

function configText(label: string): string {
  return JSON.stringify({
    config_refresh_seconds: REFRESH_MS / 1000,
    networks: { ethereum: { chain_id: 1, providers: [{ url: `https://${label}.example.com` }] } },
  });
}

function providerHost(loaded: { config: { networks: Record<string, unknown> } }): string {
  const ethereum = loaded.config.networks.ethereum as { providers: Array<{ url: string }> };
  return new URL(ethereum.providers[0]?.url ?? "").hostname;
}

let s3: S3StandIn;
let now: number;
let events: ConfigSourceEvent[];

beforeEach(async () => {
  s3 = await startS3StandIn();
  now = Date.UTC(2026, 0, 1);
  events = [];
});

afterEach(async () => {
  await s3.close();
});

function source(requestTimeoutMs = 2000) {
  const created = createConfigSource({
    kind: "s3",
    bucket: "gateway-config",
    key: "config.json",
    s3: createS3ObjectReader(
      { bucket: "gateway-config", key: "config.json", region: "us-east-1", endpoint: s3.endpoint },
      async () => ({
        accessKeyId: "AKIDEXAMPLE",
        secretAccessKey: SECRET_ACCESS_KEY,
        sessionToken: SESSION_TOKEN,
      }),
    ),
    bundled: JSON.parse(configText("bundled")),
    clock: () => now,
    requestTimeoutMs,
  });
  created.subscribe((event) => events.push(event));
  return created;
}

/** Answers with `text` and no ETag, as a proxy that drops it would. */
const withoutEtag = (text: string) => (_: unknown, response: ServerResponse) => {
  response.writeHead(200).end(text);
};

describe("an S3 answer without an ETag", () => {
  it("regression: a changed object served without an ETag was taken for the one in force and never loaded; now its content tells", async () => {
    s3.answer(withoutEtag(configText("first")));
    const config = source();
    expect(providerHost(await config.current())).toBe("first.example.com");

    s3.answer(withoutEtag(configText("second")));
    now += REFRESH_MS;
    const changed = await config.current();
    expect(providerHost(changed)).toBe("second.example.com");
    expect(changed.source).toMatchObject({ kind: "s3", etag: expect.stringMatching(/^sha256:/) });
    // A content version is no ETag: S3 is not asked If-None-Match with it.
    expect(s3.requests.map((request) => request.headers["if-none-match"])).toEqual([
      undefined,
      undefined,
    ]);
  });

  it("an unchanged object without an ETag is not reported again, nor a rejected one", async () => {
    s3.answer(withoutEtag(configText("first")));
    const config = source();
    const first = await config.current();
    now += REFRESH_MS;
    expect(await config.current()).toBe(first);
    expect(events.map((event) => event.type)).toEqual(["config_changed"]);

    s3.answer(withoutEtag("{"));
    for (let check = 0; check < 2; check++) {
      now += REFRESH_MS;
      expect(await config.current()).toBe(first);
    }
    expect(events.map((event) => event.type)).toEqual(["config_changed", "config_rejected"]);
  });
});

describe("a cold start", () => {
  it("regression: a 304 to the first, unconditional GET put the bundled copy in force with no error reported; now it is a source error", async () => {
    s3.answer((_, response) => response.writeHead(304).end());
    const loaded = await source().current();
    expect(loaded.source.kind).toBe("bundled");
    expect(events).toEqual([
      {
        type: "config_source_error",
        location: "s3://gateway-config/config.json",
        error: "Http304: HTTP 304 to a GET without If-None-Match",
      },
      { type: "config_changed", source: loaded.source },
    ]);
  });

  it("an S3 that never answers costs the cold start the request timeout, then the bundled copy", async () => {
    s3.answer(() => undefined);
    const started = performance.now();
    const loaded = await source(200).current();
    expect(loaded.source.kind).toBe("bundled");
    expect(performance.now() - started).toBeLessThan(1500);
    expect(events[0]).toMatchObject({
      type: "config_source_error",
      error: "TimeoutError: no complete answer from S3 within 200 ms",
    });
  });
});

describe("a refresh that fails keeps the last good config and reports each failed check once", () => {
  it.each<[string, (response: ServerResponse) => void, RegExp]>([
    [
      "a 500 page",
      (response) => response.writeHead(500, { "content-type": "text/html" }).end("<html/>"),
      /^Http500: HTTP 500 from S3$/,
    ],
    [
      "403 ExpiredToken",
      (response) =>
        response
          .writeHead(403)
          .end(
            "<Error><Code>ExpiredToken</Code><Message>The provided token has expired.</Message></Error>",
          ),
      /^ExpiredToken: The provided token has expired\.$/,
    ],
    [
      "301 PermanentRedirect",
      (response) =>
        response
          .writeHead(301)
          .end(
            "<Error><Code>PermanentRedirect</Code><Message>Use the other endpoint.</Message></Error>",
          ),
      /^PermanentRedirect: /,
    ],
    ["no answer", () => undefined, /^TimeoutError: no complete answer from S3 within 200 ms$/],
    [
      "a body trickling byte by byte",
      (response) => {
        response.writeHead(200, { etag: '"slow"', "content-length": "1000" });
        const drip = setInterval(() => response.write(" "), 20);
        response.on("close", () => clearInterval(drip));
      },
      /^TimeoutError: /,
    ],
    [
      "a body cut off",
      (response) => {
        response.writeHead(200, { etag: '"cut"', "content-length": "1000" });
        response.write("{", () => response.socket?.destroy());
      },
      /^Error: S3's answer was cut off: /,
    ],
    [
      "an error echoing the session token and the signature",
      (response) => {
        const echoed = `${response.req.headers["x-amz-security-token"]} ${response.req.headers.authorization}`;
        response
          .writeHead(403)
          .end(`<Error><Code>AccessDenied</Code><Message>${echoed}</Message></Error>`);
      },
      /^AccessDenied: \[redacted\] \[redacted\]$/,
    ],
  ])("%s", async (_, fail, error) => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(200);
    const good = await config.current();

    s3.answer((_request, response) => fail(response));
    for (let check = 1; check <= 2; check++) {
      // Two intervals before the second check: after a timeout the wait doubles (below).
      now += REFRESH_MS * check;
      expect(await config.current()).toBe(good);
      const failures = events.filter((event) => event.type === "config_source_error");
      expect(failures).toHaveLength(check);
      expect(failures.at(-1)).toMatchObject({ error: expect.stringMatching(error) });
      // Between checks nothing is asked and nothing reported.
      now += 1000;
      expect(await config.current()).toBe(good);
      expect(events.filter((event) => event.type === "config_source_error")).toHaveLength(check);
    }
    const reported = JSON.stringify(events);
    expect(reported).not.toContain(SESSION_TOKEN);
    expect(reported).not.toContain(SECRET_ACCESS_KEY);
    expect(reported).not.toContain("Signature=");
  });

  it("while S3 hangs, each check that runs out of time doubles the wait before the next, up to 8 intervals; an answer ends it", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(100);
    const good = await config.current();
    s3.answer(() => undefined);
    const timeouts = () => events.filter((event) => event.type === "config_source_error").length;
    const checkedAfter = async (ms: number) => {
      const before = timeouts();
      now += ms;
      expect(await config.current()).toBe(good);
      return timeouts() > before;
    };
    // Each check that times out cost a request 100 ms here (3 s in Lambda).
    expect(await checkedAfter(REFRESH_MS)).toBe(true);
    for (const wait of [2, 4, 8, 8]) {
      expect(await checkedAfter(REFRESH_MS * wait - 1)).toBe(false);
      expect(await checkedAfter(1)).toBe(true);
    }
    s3.answer((_request, response) => response.writeHead(304, { etag: '"good"' }).end());
    now += REFRESH_MS * 8;
    expect(await config.current()).toBe(good);
    // Answered: back to one interval.
    s3.answer(() => undefined);
    expect(await checkedAfter(REFRESH_MS)).toBe(true);
  });

  it("a check that fails fast (S3 refusing, or gone) keeps the interval: it cost no request any time", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(2000);
    await config.current();
    s3.answer((_request, response) => response.writeHead(503).end("<html/>"));
    for (let check = 1; check <= 3; check++) {
      now += REFRESH_MS;
      await config.current();
      expect(events.filter((event) => event.type === "config_source_error")).toHaveLength(check);
    }
  });

  it("an S3 error answer that takes most of the read's time counts as slow: the wait doubles as for a timeout", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(400);
    const good = await config.current();
    s3.answer((_request, response) => {
      setTimeout(() => response.writeHead(503).end("<html/>"), 300);
    });
    const failures = () => events.filter((event) => event.type === "config_source_error").length;
    now += REFRESH_MS;
    expect(await config.current()).toBe(good);
    expect(failures()).toBe(1);
    now += REFRESH_MS;
    await config.current();
    expect(failures()).toBe(1);
    now += REFRESH_MS;
    await config.current();
    expect(failures()).toBe(2);
  });

  it("regression: an S3 error answer whose code read TimeoutError was taken for a check that ran out of time and doubled the wait; now only the read's own timeout does", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(2000);
    await config.current();
    s3.answer((_request, response) =>
      response.writeHead(500).end("<Error><Code>TimeoutError</Code><Message>x</Message></Error>"),
    );
    for (let check = 1; check <= 2; check++) {
      now += REFRESH_MS;
      await config.current();
      expect(events.filter((event) => event.type === "config_source_error")).toHaveLength(check);
    }
  });

  it("regression: after the clock went back, no check ran until it had caught up (an hour back: an hour without config changes); now a check runs at once", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source();
    await config.current();
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"changed"' }).end(configText("changed")),
    );
    now -= 3_600_000;
    expect(providerHost(await config.current())).toBe("changed.example.com");
    // Checked just now on the new clock: the interval runs from there.
    s3.answer(() => undefined);
    now += REFRESH_MS - 1;
    expect(providerHost(await config.current())).toBe("changed.example.com");
    expect(events.filter((event) => event.type === "config_source_error")).toHaveLength(0);
  });

  it("a body that is not UTF-8 is a rejected document: reported once, not read again while its ETag stays", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(200);
    const good = await config.current();

    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"latin1"' }).end(Buffer.from([0x7b, 0xe9, 0x7d])),
    );
    for (let check = 0; check < 2; check++) {
      now += REFRESH_MS;
      expect(await config.current()).toBe(good);
    }
    expect(events.slice(1)).toEqual([
      {
        type: "config_rejected",
        location: "s3://gateway-config/config.json",
        problems: [
          { path: "(root)", message: "the object is not UTF-8 text: not a gateway config" },
        ],
      },
    ]);
    expect(s3.requests.at(-1)?.headers["if-none-match"]).toBe('"latin1"');
  });

  it("regression: a check right after S3 closed its connections went out on the dead keep-alive socket of the last one ('socket hang up', as after a Lambda thaw); now each read opens its own, and S3 gone is named as such", async () => {
    s3.answer((_request, response) =>
      response.writeHead(200, { etag: '"good"' }).end(configText("good")),
    );
    const config = source(200);
    const good = await config.current();
    await s3.close();

    now += REFRESH_MS;
    expect(await config.current()).toBe(good);
    expect(events.at(-1)).toMatchObject({
      type: "config_source_error",
      error: expect.stringMatching(/ECONNREFUSED/),
    });
  });
});
