/**
 * A provider URL as the config writes it: a template whose `${NAME}` placeholders are secrets,
 * resolved at start-up. Secrets may stand in the credentials, the path and the query, never in
 * the host, and the template must be an http(s) URL once they are filled in.
 */

/** A `${NAME}` secret placeholder; the name is group 1. */
export const PLACEHOLDER = /\$\{([^}]*)\}/g;
const PLACEHOLDER_NAME = /^[A-Z][A-Z0-9_]*$/;

/** Names of the `${NAME}` secret placeholders in a URL template. */
export function placeholdersOf(url: string): string[] {
  return [...url.matchAll(PLACEHOLDER)].map((match) => match[1] ?? "");
}

/** What is wrong with a provider URL template, each as a message for the config's author. */
export function providerUrlProblems(url: string): string[] {
  const problems: string[] = [];
  for (const name of placeholdersOf(url)) {
    if (!PLACEHOLDER_NAME.test(name)) {
      problems.push(
        `placeholder \${${name}} is not a valid secret name: use upper-case letters, digits and _ (e.g. \${ETH_KEY})`,
      );
    }
  }
  let parsed: URL;
  try {
    parsed = new URL(url.replace(PLACEHOLDER, "secret"));
  } catch {
    return [...problems, "not a valid URL: write it as https://host/path"];
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    problems.push("the URL must use http:// or https://");
  }
  // The credentials before an `@` may be secrets (basic-auth providers); the host may not.
  const authority = /^[^:/?#]*:\/\/([^/?#]*)/.exec(url)?.[1] ?? "";
  if (authority.slice(authority.lastIndexOf("@") + 1).includes("${")) {
    problems.push("a secret placeholder may not stand in the host");
  }
  if (url.replace(PLACEHOLDER, "").includes("${")) {
    problems.push("an unclosed placeholder: write it as ${NAME}, with the closing }");
  }
  return problems;
}
