import { type Config, PLACEHOLDER, placeholdersOf } from "./config-schema.ts";
import { formatPath } from "./network-model.ts";

/** One `${NAME}` placeholder in one provider URL, with the URL's JSON path. */
export interface PlaceholderUse {
  readonly path: string;
  readonly name: string;
}

export function placeholderUses(config: Config): PlaceholderUse[] {
  const uses: PlaceholderUse[] = [];
  for (const [network, { providers }] of Object.entries(config.networks)) {
    providers.forEach((provider, index) => {
      const path = formatPath(["networks", network, "providers", index, "url"]);
      for (const name of placeholdersOf(provider.url)) uses.push({ path, name });
    });
  }
  return uses;
}

/** The distinct secret names a config needs, sorted. */
export function secretNamesOf(config: Config): string[] {
  return [...new Set(placeholderUses(config).map((use) => use.name))].sort();
}

/**
 * Fills every `${NAME}` of a URL template. Values are URL-encoded so a secret can never
 * change the URL's structure (add a path segment, a query or a host). Throws naming the
 * placeholder, never a value, when one is missing.
 */
export function resolveUrlTemplate(template: string, values: ReadonlyMap<string, string>): string {
  return template.replace(PLACEHOLDER, (_match, name: string) => {
    const value = values.get(name);
    if (value === undefined) throw new Error(`no value for placeholder \${${name}}`);
    return encodeURIComponent(value);
  });
}
