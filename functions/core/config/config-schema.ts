import { en } from "zod/locales";
import * as z from "zod/mini";
import { defineConfigSchemas } from "./config-schema-definition.ts";

export { DEFAULT_METHODS_DENY } from "../methods/deny-by-default.ts";
export { PLACEHOLDER, placeholdersOf } from "./provider-url.ts";

/**
 * The config-as-code schemas, built on first use. Building them costs several ms of CPU that a
 * Lambda would otherwise pay in every cold start's import, although a config validated at
 * build time never needs them (see `config-prepared.ts`). Each export behaves as the schema it
 * stands for (`configSchema.parse(...)`, `z.infer<typeof configSchema>`).
 */
type Schemas = ReturnType<typeof defineConfigSchemas>;

let built: Schemas | undefined;
function schemas(): Schemas {
  if (built === undefined) {
    // zod/mini (18 KB, against 443 KB for classic zod) keeps the Lambda bundle small; the
    // English locale gives the same messages classic zod would.
    z.config(en());
    built = defineConfigSchemas();
  }
  return built;
}

/** A stand-in that forwards every use to the named schema, building the schemas first. */
function builtOnFirstUse<K extends keyof Schemas>(name: K): Schemas[K] {
  return new Proxy({} as Schemas[K], {
    get: (_, key) => Reflect.get(schemas()[name], key),
    has: (_, key) => Reflect.has(schemas()[name], key),
    getPrototypeOf: () => Reflect.getPrototypeOf(schemas()[name]),
  });
}

export const configSchema = builtOnFirstUse("configSchema");
export const settingsSchema = builtOnFirstUse("settingsSchema");
export const networkSchema = builtOnFirstUse("networkSchema");
export const providerSchema = builtOnFirstUse("providerSchema");
export const apiKeySchema = builtOnFirstUse("apiKeySchema");
export const cooldownSecondsSchema = builtOnFirstUse("cooldownSecondsSchema");

export type ConfigInput = z.input<Schemas["configSchema"]>;
export type Config = z.infer<Schemas["configSchema"]>;
export type Settings = z.infer<Schemas["settingsSchema"]>;
export type NetworkConfig = z.infer<Schemas["networkSchema"]>;
export type ProviderConfig = z.infer<Schemas["providerSchema"]>;
export type CooldownSeconds = z.infer<Schemas["cooldownSecondsSchema"]>;
