import { once } from "node:events";
import { createServer as createHttpServer } from "node:http";
import { createServer, type Socket } from "node:net";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createSecretResolver,
  envSecretResolver,
  secretsManagerSecretResolver,
  ssmSecretResolver,
} from "../../../../functions/adapters/config/secrets.ts";
import {
  createSecretsExtension,
  type SecretsExtension,
} from "../../../../functions/adapters/config/secrets-extension.ts";
import { parseConfig } from "../../../../functions/core/config/network-model.ts";
import {
  resolveUrlTemplate,
  secretNamesOf,
} from "../../../../functions/core/config/placeholders.ts";
import {
  type SecretsExtensionStandIn,
  startSecretsExtension,
} from "../../../support/secrets-extension.ts";

/**
 * The SSM and Secrets Manager resolvers read through the Parameters and Secrets extension's
 * local HTTP API; here a real HTTP server on 127.0.0.1 speaks it.
 */
let standIn: SecretsExtensionStandIn;
const opened: SecretsExtension[] = [];

beforeAll(async () => {
  standIn = await startSecretsExtension();
});

afterAll(async () => {
  await standIn.close();
});

beforeEach(() => standIn.reset());

afterEach(async () => {
  await Promise.all(opened.splice(0).map((extension) => extension.close()));
});

const PREFIX = "/evm-rpc-gateway/test/";
/** Short limits so a silent extension costs a test a fraction of a second. */
const TIMEOUT_MS = 150;
const RETRY_PAUSE_MS = 10;

function extension(
  options: { token?: string | undefined; origin?: string; timeoutMs?: number } = {},
) {
  const token = "token" in options ? options.token : standIn.token;
  const opening = createSecretsExtension({
    origin: options.origin ?? standIn.origin,
    token: () => token,
    timeoutMs: options.timeoutMs ?? TIMEOUT_MS,
    retryPauseMs: RETRY_PAUSE_MS,
  });
  opened.push(opening);
  return opening;
}

/** A port nothing listens on: the extension not started (or its layer missing). */
async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("resolveUrlTemplate", () => {
  it("fills every placeholder, URL-encoded so a value cannot change the URL's shape", () => {
    const values = new Map([
      ["KEY", "abc123"],
      ["ODD", "a/b?c"],
    ]);
    expect(resolveUrlTemplate(`https://x.example/v2/\${KEY}?k=\${ODD}`, values)).toBe(
      "https://x.example/v2/abc123?k=a%2Fb%3Fc",
    );
  });

  it("names a placeholder without a value, with the reason it did not resolve", () => {
    expect(resolveUrlTemplate(`https://x.example/\${NOPE}`, new Map())).toEqual({
      unresolved: `no value for placeholder \${NOPE}`,
    });
    expect(
      resolveUrlTemplate(
        `https://x.example/\${A}/\${B}`,
        new Map(),
        new Map([["A", "cannot read SSM parameters /p/A: ThrottlingException: Rate exceeded"]]),
      ),
    ).toEqual({
      unresolved:
        "cannot read SSM parameters /p/A: ThrottlingException: Rate exceeded; no value for placeholder ${B}",
    });
  });

  it("lists a config's secret names once each", () => {
    const parsed = parseConfig({
      networks: {
        a: { chain_id: 1, providers: [{ url: `https://a.example/\${B_KEY}/\${A_KEY}` }] },
        b: { chain_id: 2, providers: [{ url: `https://b.example/\${A_KEY}` }] },
      },
    });
    expect(parsed.ok && secretNamesOf(parsed.config)).toEqual(["A_KEY", "B_KEY"]);
  });
});

describe("environment resolver", () => {
  it("reads each placeholder from the variable of the same name, trimmed", async () => {
    const resolver = envSecretResolver({ ETH_KEY: "eth-value\n", BASE_KEY: "base-value" });
    expect(await resolver.lookup(["ETH_KEY", "BASE_KEY"])).toEqual({
      values: new Map([
        ["ETH_KEY", "eth-value"],
        ["BASE_KEY", "base-value"],
      ]),
      unresolved: new Map(),
    });
  });

  it("names every missing or empty placeholder, never a value, and resolves the rest", async () => {
    const resolver = envSecretResolver({ SET_KEY: "the-value", EMPTY_KEY: " " });
    const { values, unresolved } = await resolver.lookup(["SET_KEY", "EMPTY_KEY", "UNSET_KEY"]);
    expect(values).toEqual(new Map([["SET_KEY", "the-value"]]));
    expect(unresolved).toEqual(
      new Map([
        ["EMPTY_KEY", `no value for placeholder \${EMPTY_KEY}: set EMPTY_KEY in the environment`],
        ["UNSET_KEY", `no value for placeholder \${UNSET_KEY}: set UNSET_KEY in the environment`],
      ]),
    );
    expect(JSON.stringify([...unresolved])).not.toContain("the-value");
  });
});

describe("SSM Parameter Store through the extension", () => {
  it("reads SecureString parameters decrypted, one GET each with the session token, more than SSM's batch of 10 and at most 10 at once", async () => {
    const names = Array.from({ length: 23 }, (_, index) => `KEY_${index}`);
    for (const name of names) standIn.parameters.set(`${PREFIX}${name}`, `value-of-${name}`);
    standIn.delayMs = 10;

    const { values, unresolved } = await ssmSecretResolver(
      extension({ timeoutMs: 2_000 }),
      PREFIX,
    ).lookup(names);

    expect(values).toEqual(new Map(names.map((name) => [name, `value-of-${name}`])));
    expect(unresolved.size).toBe(0);
    expect(standIn.calls).toHaveLength(23);
    expect(standIn.calls.map((call) => call.query.name).sort()).toEqual(
      names.map((name) => `${PREFIX}${name}`).sort(),
    );
    for (const call of standIn.calls) {
      expect(call.path).toBe("/systemsmanager/parameters/get");
      expect(call.query.withDecryption).toBe("true");
      expect(call.token).toBe(standIn.token);
    }
    expect(standIn.maxInFlight).toBeGreaterThan(1);
    expect(standIn.maxInFlight).toBeLessThanOrEqual(10);
  });

  it("names a missing placeholder, its parameter and how to fix it, never a value", async () => {
    standIn.parameters.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const { values, unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup([
      "PRESENT_KEY",
      "ABSENT_KEY",
    ]);

    expect(values).toEqual(new Map([["PRESENT_KEY", "present-secret-value"]]));
    expect(unresolved).toEqual(
      new Map([
        [
          "ABSENT_KEY",
          `no value for placeholder \${ABSENT_KEY}: SSM parameter ${PREFIX}ABSENT_KEY does not exist or the function's role may not read it (the extension answered HTTP 400: an unexpected error occurred while executing request); create the SecureString parameter ${PREFIX}ABSENT_KEY`,
        ],
      ]),
    );
    expect(JSON.stringify([...unresolved])).not.toContain("present-secret-value");
  });

  it("a wrong session token is refused: every name reports it", async () => {
    standIn.parameters.set(`${PREFIX}ETH_KEY`, "eth-secret-value");
    const { values, unresolved } = await ssmSecretResolver(
      extension({ token: "someone-elses-token" }),
      PREFIX,
    ).lookup(["ETH_KEY"]);
    expect(values.size).toBe(0);
    expect(unresolved.get("ETH_KEY")).toBe(
      `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${standIn.origin} refused the session token (HTTP 401: Unauthorized)`,
    );
  });

  it("without AWS_SESSION_TOKEN (outside Lambda) nothing is asked and every name says why", async () => {
    const { unresolved } = await ssmSecretResolver(extension({ token: undefined }), PREFIX).lookup([
      "ETH_KEY",
    ]);
    expect(standIn.calls).toEqual([]);
    expect(unresolved.get("ETH_KEY")).toMatch(/AWS_SESSION_TOKEN is not set/);
  });

  it("an extension not ready yet is asked once more after a pause, and the value is read", async () => {
    standIn.parameters.set(`${PREFIX}ETH_KEY`, "eth-secret-value");
    standIn.fault = "not-ready";
    standIn.faultCount = 1;

    const { values } = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);

    expect(values).toEqual(new Map([["ETH_KEY", "eth-secret-value"]]));
    expect(standIn.calls).toHaveLength(2);
  });

  it("an extension still not ready on the second try leaves the name unresolved with why", async () => {
    standIn.fault = "not-ready";
    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);
    expect(standIn.calls).toHaveLength(2);
    expect(unresolved.get("ETH_KEY")).toBe(
      `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${standIn.origin} was not ready (not ready to serve traffic, please wait)`,
    );
  });

  it("nothing listening (the layer missing): the connection is refused, twice, and reported", async () => {
    const origin = `http://127.0.0.1:${await closedPort()}`;
    const { unresolved } = await ssmSecretResolver(extension({ origin }), PREFIX).lookup([
      "ETH_KEY",
    ]);
    expect(unresolved.get("ETH_KEY")).toMatch(
      new RegExp(
        `^cannot read SSM parameter ${PREFIX}ETH_KEY for \\$\\{ETH_KEY\\}: cannot reach the Parameters and Secrets extension at ${origin}: ECONNREFUSED`,
      ),
    );
  });

  it("an extension that never answers costs one attempt of the timeout, not a retry and not forever", async () => {
    standIn.fault = "silent";
    const started = performance.now();
    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(["A_KEY", "B_KEY"]);
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS * 2);
    expect(standIn.calls).toHaveLength(2);
    expect(unresolved.get("A_KEY")).toBe(
      `cannot read SSM parameter ${PREFIX}A_KEY for \${A_KEY}: no answer from the Parameters and Secrets extension at ${standIn.origin} within ${TIMEOUT_MS} ms`,
    );
  });

  it("regression: a name that waited for one of the 10 connections until its time ran out was reported as the extension's silence; now the reason says it was never sent", async () => {
    standIn.fault = "silent";
    const names = Array.from({ length: 30 }, (_, index) => `KEY_${index}`);

    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(names);

    const where = `the Parameters and Secrets extension at ${standIn.origin}`;
    const silence = `no answer from ${where} within ${TIMEOUT_MS} ms`;
    const queued = `no connection to ${where} was free within ${TIMEOUT_MS} ms (more names asked at once than its 10 connections answered in time)`;
    const reasons = names.map((name) =>
      unresolved
        .get(name)
        ?.replace(`cannot read SSM parameter ${PREFIX}${name} for \${${name}}: `, ""),
    );
    // The first 10 were sent and met silence; of the rest, those still queued say so (a
    // connection freed as the first ones were given up may carry one or two in time).
    expect(reasons.filter((reason) => reason === silence).length).toBeGreaterThanOrEqual(10);
    expect(reasons.filter((reason) => reason === queued).length).toBeGreaterThanOrEqual(10);
    expect(reasons.every((reason) => reason === silence || reason === queued)).toBe(true);
    expect(standIn.calls.length).toBeLessThan(20);
  });

  it("a 5xx is retried once: a passing one is absorbed, a lasting one reported with the status", async () => {
    standIn.parameters.set(`${PREFIX}ETH_KEY`, "eth-secret-value");
    standIn.fault = { status: 502, body: "bad gateway" };
    standIn.faultCount = 1;
    expect((await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"])).values).toEqual(
      new Map([["ETH_KEY", "eth-secret-value"]]),
    );

    standIn.fault = { status: 500, body: "internal error\nwith a second line" };
    standIn.faultCount = -1;
    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);
    expect(unresolved.get("ETH_KEY")).toBe(
      `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${standIn.origin} answered HTTP 500: internal error with a second line`,
    );
  });

  it("an answer over 256 KB is cut off and refused, without showing it", async () => {
    standIn.fault = { status: 200, body: `{"Parameter":{"Value":"${"v".repeat(300 * 1024)}"}}` };
    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);
    expect(unresolved.get("ETH_KEY")).toBe(
      `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${standIn.origin} answered over 262144 bytes`,
    );
  });

  it("a 200 that is not the GetParameter shape is refused without showing its body", async () => {
    standIn.fault = { status: 200, body: "leaked-secret-value not json" };
    const notJson = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);
    standIn.fault = { status: 200, body: JSON.stringify({ Value: "leaked-secret-value" }) };
    const wrongShape = await ssmSecretResolver(extension(), PREFIX).lookup(["ETH_KEY"]);

    expect(notJson.unresolved.get("ETH_KEY")).toMatch(/answered 200 with a body that is not JSON$/);
    expect(wrongShape.unresolved.get("ETH_KEY")).toBe(
      `SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY} came back without a string value`,
    );
    expect(JSON.stringify([...notJson.unresolved, ...wrongShape.unresolved])).not.toContain(
      "leaked-secret-value",
    );
  });
  it("a SECRETS_PREFIX with query syntax, spaces, unicode or '..' asks for exactly that parameter, with decryption: nothing of it becomes another query field", async () => {
    const prefix = "/a b&withDecryption=false#x?y=z/é/../";
    standIn.parameters.set(`${prefix}ETH_KEY`, "eth-secret-value");
    const { values } = await ssmSecretResolver(extension(), prefix).lookup(["ETH_KEY"]);
    expect(values).toEqual(new Map([["ETH_KEY", "eth-secret-value"]]));
    expect(standIn.calls.map((call) => call.query)).toEqual([
      { name: `${prefix}ETH_KEY`, withDecryption: "true" },
    ]);
  });

  it("a redirect is not followed: the session token goes nowhere but the extension's port", async () => {
    const elsewhere: string[] = [];
    const other = createHttpServer((req, res) => {
      elsewhere.push(String(req.headers["x-aws-parameters-secrets-token"]));
      res.end("{}");
    });
    other.listen(0, "127.0.0.1");
    await once(other, "listening");
    const target = `http://127.0.0.1:${(other.address() as { port: number }).port}/`;
    const redirecting = createHttpServer((_req, res) => {
      res.writeHead(307, { location: target });
      res.end("moved");
    });
    redirecting.listen(0, "127.0.0.1");
    await once(redirecting, "listening");
    const origin = `http://127.0.0.1:${(redirecting.address() as { port: number }).port}`;
    try {
      const { unresolved } = await ssmSecretResolver(extension({ origin }), PREFIX).lookup([
        "ETH_KEY",
      ]);
      expect(unresolved.get("ETH_KEY")).toBe(
        `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${origin} answered HTTP 307: moved`,
      );
      expect(elsewhere).toEqual([]);
    } finally {
      for (const server of [other, redirecting]) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    }
  });

  it("a session token with CR/LF or a non-Latin-1 character sends nothing and is not shown", async () => {
    for (const token of ["abc\r\nx-injected: 1", "abc\u2028token", "abc\0token"]) {
      const { unresolved } = await ssmSecretResolver(extension({ token }), PREFIX).lookup([
        "ETH_KEY",
      ]);
      expect(unresolved.get("ETH_KEY")).toBe(
        `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: cannot reach the Parameters and Secrets extension at ${standIn.origin}: UND_ERR_INVALID_ARG invalid x-aws-parameters-secrets-token header`,
      );
    }
    expect(standIn.calls).toEqual([]);
  });

  it("an answer dripped a byte at a time is cut at the one time limit; one closed mid-body is asked once more, then reported; neither shows what it sent", async () => {
    let mode: "drip" | "cut" = "drip";
    let requests = 0;
    const sockets = new Set<Socket>();
    const raw = createServer((socket) => {
      sockets.add(socket);
      socket.on("error", () => {});
      socket.once("data", () => {
        requests++;
        const body = JSON.stringify({ Parameter: { Value: "leaked-secret-value" } });
        if (mode === "cut") {
          socket.end(
            `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 20)}`,
          );
          return;
        }
        const answer = `HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
        let sent = 0;
        const drip = setInterval(() => {
          if (socket.destroyed || sent >= answer.length) clearInterval(drip);
          else socket.write(answer.charAt(sent++));
        }, 10);
      });
    });
    raw.listen(0, "127.0.0.1");
    await once(raw, "listening");
    const origin = `http://127.0.0.1:${(raw.address() as { port: number }).port}`;
    try {
      const started = performance.now();
      const dripped = await ssmSecretResolver(extension({ origin }), PREFIX).lookup(["ETH_KEY"]);
      expect(performance.now() - started).toBeLessThan(TIMEOUT_MS * 2);
      expect(dripped.unresolved.get("ETH_KEY")).toBe(
        `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: no answer from the Parameters and Secrets extension at ${origin} within ${TIMEOUT_MS} ms`,
      );
      expect(requests).toBe(1);
      mode = "cut";
      const cut = await ssmSecretResolver(extension({ origin }), PREFIX).lookup(["ETH_KEY"]);
      expect(cut.unresolved.get("ETH_KEY")).toMatch(
        /: cannot reach the Parameters and Secrets extension at .*: UND_ERR_SOCKET other side closed$/,
      );
      expect(requests).toBe(3);
      expect(JSON.stringify([...cut.unresolved])).not.toContain("leaked");
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => raw.close(() => resolve()));
    }
  });

  it("regression: an error answer echoing the session token showed it in the reason, and so in the status route and the log; now the token is masked as written, URL-encoded or JSON-escaped, even where the excerpt is cut", async () => {
    const token = "IQoJb3JpZ2luX2VjE/session+token==";
    const echoes = [
      { status: 401, body: `token ${token} is not this container's` },
      { status: 400, body: `GET /get?token=${encodeURIComponent(token)} failed` },
      { status: 500, body: `{"header":"${token.replaceAll("/", "\\/")}"}` },
      { status: 400, body: JSON.stringify({ token }) },
      { status: 503, body: `${"x".repeat(150)} ${token}` },
    ];
    for (const echo of echoes) {
      standIn.fault = echo;
      const { unresolved } = await ssmSecretResolver(extension({ token }), PREFIX).lookup([
        "ETH_KEY",
      ]);
      const reason = unresolved.get("ETH_KEY") ?? "";
      expect(reason).toMatch(new RegExp(`HTTP ${echo.status}`));
      // Neither end of the token, in any form.
      expect(reason).not.toMatch(/IQoJb3Jp|session(\+|%2B)token/);
    }
  });

  it("regression: a 2xx other than 200, or an error answer in the shape of a read's result, showed the value in the reason; now its body is not shown", async () => {
    const value = "leaked-secret-value";
    const answers = [
      { status: 203, body: JSON.stringify({ Parameter: { Value: value } }) },
      { status: 206, body: value },
      {
        status: 404,
        body: JSON.stringify({ Parameter: { Name: `${PREFIX}ETH_KEY`, Value: value } }),
      },
      { status: 302, body: `{"SecretString":"${value}"}` },
    ];
    for (const answer of answers) {
      standIn.fault = answer;
      const { values, unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup([
        "ETH_KEY",
      ]);
      expect(values.size).toBe(0);
      expect(unresolved.get("ETH_KEY")).toBe(
        `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${standIn.origin} answered HTTP ${answer.status} with a body that may hold a value (not shown)`,
      );
    }
  });

  it("regression: a 200 whose body was not UTF-8 resolved to a key with U+FFFD in it; now it is refused without being shown", async () => {
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        Buffer.from([
          ...Buffer.from('{"Parameter":{"Value":"ab'),
          0xff,
          0xfe,
          ...Buffer.from('cd"}}'),
        ]),
      );
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as { port: number };
    try {
      const origin = `http://127.0.0.1:${port}`;
      const { values, unresolved } = await ssmSecretResolver(extension({ origin }), PREFIX).lookup([
        "ETH_KEY",
      ]);
      expect(values.size).toBe(0);
      expect(unresolved.get("ETH_KEY")).toBe(
        `cannot read SSM parameter ${PREFIX}ETH_KEY for \${ETH_KEY}: the Parameters and Secrets extension at ${origin} answered 200 with a body that is not UTF-8`,
      );
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("regression: a parameter whose value was empty or whitespace was reported as missing ('create the parameter'); now the reason says it is empty", async () => {
    standIn.parameters.set(`${PREFIX}BLANK_KEY`, " \n\t ");
    const { unresolved } = await ssmSecretResolver(extension(), PREFIX).lookup(["BLANK_KEY"]);
    expect(unresolved.get("BLANK_KEY")).toBe(
      `SSM parameter ${PREFIX}BLANK_KEY for \${BLANK_KEY} is empty`,
    );
  });
});

describe("Secrets Manager through the extension", () => {
  it('reads a JSON secret {"value": ...} and a plain-string secret', async () => {
    standIn.secrets.set(`${PREFIX}JSON_KEY`, JSON.stringify({ value: "json-secret" }));
    standIn.secrets.set(`${PREFIX}PLAIN_KEY`, "plain-secret");

    const { values } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "JSON_KEY",
      "PLAIN_KEY",
    ]);

    expect(values).toEqual(
      new Map([
        ["JSON_KEY", "json-secret"],
        ["PLAIN_KEY", "plain-secret"],
      ]),
    );
    expect(standIn.calls.map((call) => [call.path, call.query.secretId]).sort()).toEqual([
      ["/secretsmanager/get", `${PREFIX}JSON_KEY`],
      ["/secretsmanager/get", `${PREFIX}PLAIN_KEY`],
    ]);
  });

  it("names the missing placeholder, its secret id and how to fix it", async () => {
    standIn.secrets.set(`${PREFIX}PRESENT_KEY`, "present-secret-value");

    const { values, unresolved } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "PRESENT_KEY",
      "ABSENT_KEY",
    ]);

    expect(values).toEqual(new Map([["PRESENT_KEY", "present-secret-value"]]));
    expect(unresolved.get("ABSENT_KEY")).toBe(
      `no value for placeholder \${ABSENT_KEY}: secret ${PREFIX}ABSENT_KEY does not exist or the function's role may not read it (the extension answered HTTP 400: an unexpected error occurred while executing request); create the secret ${PREFIX}ABSENT_KEY in Secrets Manager`,
    );
  });

  it("rejects a JSON secret without a string value field, without showing it", async () => {
    standIn.secrets.set(`${PREFIX}WRONG_KEY`, JSON.stringify({ apiKey: "hidden-secret" }));

    const { unresolved } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "WRONG_KEY",
    ]);

    expect(unresolved.get("WRONG_KEY")).toBe(
      `secret ${PREFIX}WRONG_KEY is JSON without a string "value" field`,
    );
  });

  it("refuses a binary secret, without showing it", async () => {
    standIn.secrets.set(`${PREFIX}BINARY_KEY`, { binary: Buffer.from("binary-secret-value") });

    const { unresolved } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "BINARY_KEY",
    ]);

    expect(unresolved.get("BINARY_KEY")).toBe(
      `secret ${PREFIX}BINARY_KEY for \${BINARY_KEY} has no string value (binary is not supported)`,
    );
  });
  it("regression: an empty secret was reported as missing ('create the secret'); now the reason says it is empty", async () => {
    standIn.secrets.set(`${PREFIX}EMPTY_JSON_KEY`, JSON.stringify({ value: "" }));
    standIn.secrets.set(`${PREFIX}BLANK_KEY`, "   ");
    const { values, unresolved } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "EMPTY_JSON_KEY",
      "BLANK_KEY",
    ]);
    expect(values.size).toBe(0);
    expect(unresolved).toEqual(
      new Map([
        ["EMPTY_JSON_KEY", `secret ${PREFIX}EMPTY_JSON_KEY for \${EMPTY_JSON_KEY} is empty`],
        ["BLANK_KEY", `secret ${PREFIX}BLANK_KEY for \${BLANK_KEY} is empty`],
      ]),
    );
  });

  it('regression: a secret string starting with "{" that is not JSON (a mistyped {"value": ...}) was sent to the provider as the key; now it is refused without being shown', async () => {
    standIn.secrets.set(`${PREFIX}TYPO_KEY`, '{"value": "hidden-secret"');
    standIn.secrets.set(`${PREFIX}QUOTED_KEY`, "{'value': 'hidden-secret'}");
    const { values, unresolved } = await secretsManagerSecretResolver(extension(), PREFIX).lookup([
      "TYPO_KEY",
      "QUOTED_KEY",
    ]);
    expect(values.size).toBe(0);
    expect(unresolved).toEqual(
      new Map([
        ["TYPO_KEY", `secret ${PREFIX}TYPO_KEY starts with "{" but is not JSON`],
        ["QUOTED_KEY", `secret ${PREFIX}QUOTED_KEY starts with "{" but is not JSON`],
      ]),
    );
  });
});

describe("createSecretResolver", () => {
  const lambdaEnv = (source: string) => ({
    SECRETS_SOURCE: source,
    SECRETS_PREFIX: PREFIX,
    PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: String(standIn.port),
    AWS_SESSION_TOKEN: standIn.token,
  });

  it("picks SSM or Secrets Manager through the extension on its port, and the environment by default", async () => {
    standIn.parameters.set(`${PREFIX}SSM_KEY`, "from-ssm");
    standIn.secrets.set(`${PREFIX}SM_KEY`, "from-secrets-manager");

    const fromSsm = createSecretResolver(lambdaEnv("ssm"));
    expect(await fromSsm.lookup(["SSM_KEY", "ABSENT_KEY"])).toEqual({
      values: new Map([["SSM_KEY", "from-ssm"]]),
      unresolved: new Map([
        [
          "ABSENT_KEY",
          `no value for placeholder \${ABSENT_KEY}: SSM parameter ${PREFIX}ABSENT_KEY does not exist or the function's role may not read it (the extension answered HTTP 400: an unexpected error occurred while executing request); create the SecureString parameter ${PREFIX}ABSENT_KEY`,
        ],
      ]),
    });
    const fromSecretsManager = createSecretResolver(lambdaEnv("secretsmanager"));
    expect((await fromSecretsManager.lookup(["SM_KEY"])).values).toEqual(
      new Map([["SM_KEY", "from-secrets-manager"]]),
    );
    expect(standIn.calls.map((call) => call.path)).toEqual([
      "/systemsmanager/parameters/get",
      "/systemsmanager/parameters/get",
      "/secretsmanager/get",
    ]);

    const fromEnv = createSecretResolver({ SM_KEY: "from-env" });
    expect((await fromEnv.lookup(["SM_KEY"])).values).toEqual(new Map([["SM_KEY", "from-env"]]));
  });

  it("reads the session token at each lookup, so a token Lambda renews is used", async () => {
    standIn.parameters.set(`${PREFIX}SSM_KEY`, "from-ssm");
    const env: Record<string, string> = { ...lambdaEnv("ssm"), AWS_SESSION_TOKEN: "stale" };
    const resolver = createSecretResolver(env);
    expect((await resolver.lookup(["SSM_KEY"])).values.size).toBe(0);
    env.AWS_SESSION_TOKEN = standIn.token;
    expect((await resolver.lookup(["SSM_KEY"])).values).toEqual(new Map([["SSM_KEY", "from-ssm"]]));
  });

  it("a PARAMETERS_SECRETS_EXTENSION_HTTP_PORT that is not a port leaves every name unresolved with why, without throwing", async () => {
    const resolver = createSecretResolver({
      ...lambdaEnv("ssm"),
      PARAMETERS_SECRETS_EXTENSION_HTTP_PORT: "27 73",
    });
    expect((await resolver.lookup(["A_KEY"])).unresolved.get("A_KEY")).toBe(
      'cannot read secrets: PARAMETERS_SECRETS_EXTENSION_HTTP_PORT is not a port: "27 73"',
    );
    expect(standIn.calls).toEqual([]);
  });

  it("refuses an unknown SECRETS_SOURCE", () => {
    expect(() => createSecretResolver({ SECRETS_SOURCE: "vault" })).toThrow(
      'SECRETS_SOURCE must be env, ssm or secretsmanager, not "vault"',
    );
  });
});
