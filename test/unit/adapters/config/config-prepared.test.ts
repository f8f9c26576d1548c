import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfigText } from "../../../../functions/adapters/config/config-file.ts";
import { prepareConfig } from "../../../../functions/adapters/config/config-prepared.ts";
import { bundledConfigFiles } from "../../../../infra/constructs/bundled-config.ts";

const ROOT = join(import.meta.dirname, "..", "..", "..", "..");

describe("preparing a config at build time", () => {
  it.each(["local", "dev", "prod"])(
    "config/%s.json: the prepared config is exactly the schema's output",
    (env) => {
      const text = readFileSync(join(ROOT, "config", `${env}.json`), "utf8");
      const prepared = prepareConfig(text, `config/${env}.json`);
      const expected = parseConfigText(text);

      expect(prepared).toBeDefined();
      expect(expected.ok).toBe(true);
      expect(JSON.parse(prepared ?? "null").config).toStrictEqual(
        expected.ok ? expected.config : null,
      );
    },
  );

  it("refuses an invalid config, naming every problem", () => {
    const text = JSON.stringify({ networks: { ethereum: { chain_id: 0, providers: [] } } });

    expect(() => prepareConfig(text, "config/dev.json")).toThrow(
      /config\/dev.json is not a valid gateway config:\nconfig\/dev.json: networks.ethereum.chain_id: .*\nconfig\/dev.json: networks.ethereum.providers: a network needs at least one provider/,
    );
  });

  it("prepares nothing when JSON cannot carry the schema's output exactly (a -0)", () => {
    const text =
      '{"networks":{"a":{"chain_id":1,"providers":[{"url":"https://a.example","priority":-0}]}}}';

    expect(parseConfigText(text).ok).toBe(true);
    expect(prepareConfig(text, "config/dev.json")).toBeUndefined();
    expect(bundledConfigFiles(text, "config/dev.json").map((file) => file.name)).toEqual([
      "config.json",
    ]);
  });

  it("bundles the document byte for byte beside the prepared config", () => {
    const text = readFileSync(join(ROOT, "config", "dev.json"), "utf8");

    const files = bundledConfigFiles(text, "config/dev.json");

    expect(files.map((file) => file.name)).toEqual(["config.json", "config.prepared.json"]);
    expect(files[0]?.contents).toBe(text);
  });
});
