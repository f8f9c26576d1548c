import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  DEPLOYED_ENVIRONMENTS,
  ENVIRONMENTS,
  environmentSettings,
} from "../../infra/environments.ts";
import { createGatewayApp } from "../../infra/gateway-app.ts";
import { readGatewayConfig } from "../../infra/gateway-config.ts";
import { scratchOutdir } from "../support/scratch-outdir.ts";

describe("environment settings", () => {
  it("deploys dev and prod, each with settings of its own name", () => {
    expect([...DEPLOYED_ENVIRONMENTS]).toEqual(["dev", "prod"]);
    for (const name of DEPLOYED_ENVIRONMENTS) expect(environmentSettings(name).name).toBe(name);
  });

  it("refuses local, an unknown name or none, listing the valid ones", () => {
    expect(() => environmentSettings("local")).toThrow(/"local" is not deployed.*dev, prod/);
    expect(() => environmentSettings("staging")).toThrow(
      /unknown environment "staging": use one of: dev, prod/,
    );
    expect(() => environmentSettings("toString")).toThrow(/unknown environment/);
    expect(() => environmentSettings(undefined)).toThrow(/-c env=<name> with one of: dev, prod/);
  });

  it("refuses an unknown environment before building anything", () => {
    const outdir = scratchOutdir("rpc-gateway-qa-");
    expect(() => createGatewayApp({ appProps: { context: { env: "qa" }, outdir } })).toThrow(
      /unknown environment "qa"/,
    );
  });

  it("keeps prod's data and alarms on a backup after 10 minutes everywhere", () => {
    expect(ENVIRONMENTS.prod.deletionProtection).toBe(true);
    expect(ENVIRONMENTS.prod.removalPolicy).toBe("retain");
    expect(ENVIRONMENTS.dev.removalPolicy).toBe("destroy");
    for (const settings of Object.values(ENVIRONMENTS)) {
      expect(settings.alarms.backupInUseMinutes).toBe(10);
      expect(settings.api.throttle.burstLimit).toBeGreaterThanOrEqual(
        settings.api.throttle.rateLimit,
      );
    }
  });
});

describe("the environment's config file at synth time", () => {
  const rootWith = (env: string, text: string): string => {
    const root = scratchOutdir("rpc-gateway-config-");
    mkdirSync(join(root, "config"));
    writeFileSync(join(root, "config", `${env}.json`), text);
    return root;
  };

  it("gives network names and secret names of the real dev and prod files", () => {
    for (const env of DEPLOYED_ENVIRONMENTS) {
      const config = readGatewayConfig(env);
      expect(config.key).toBe(`config/${env}.json`);
      expect(config.networks.length).toBeGreaterThan(0);
      for (const name of config.secretNames) expect(name).toMatch(/^[A-Z][A-Z0-9_]*$/);
    }
  });

  it("collects the ${NAME} placeholders once each, sorted", () => {
    const url = (host: string, key: string) => `https://${host}/v2/\${${key}}`;
    const config = readGatewayConfig(
      "dev",
      rootWith(
        "dev",
        JSON.stringify({
          networks: {
            ethereum: {
              chain_id: 1,
              providers: [{ url: url("a.example", "B_KEY") }, { url: url("b.example", "A_KEY") }],
            },
            base: { chain_id: 8453, providers: [{ url: url("c.example", "B_KEY") }] },
          },
        }),
      ),
    );
    expect(config.networks).toEqual(["ethereum", "base"]);
    expect(config.secretNames).toEqual(["A_KEY", "B_KEY"]);
  });

  it("fails the synth on a missing, malformed or invalid file, naming it", () => {
    const empty = scratchOutdir("rpc-gateway-config-");
    expect(() => readGatewayConfig("dev", empty)).toThrow(/cannot read config\/dev\.json/);
    expect(() => readGatewayConfig("dev", rootWith("dev", "{"))).toThrow(
      /config\/dev\.json is not valid JSON/,
    );
    expect(() =>
      readGatewayConfig(
        "dev",
        rootWith("dev", JSON.stringify({ networks: { x: { chain_id: 1 } } })),
      ),
    ).toThrow(/config\/dev\.json is not a valid gateway config:[\s\S]*providers/);
  });
});
