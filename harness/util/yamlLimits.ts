// Limits on turning YAML into values, shared by recipes and inventories: an alias bomb (anchors
// that expand to each other nine times over) must be one clear message, not gigabytes or a stack.

/** How many alias expansions a recipe or inventory may use; a few anchors never come near it. */
export const MAX_ALIAS_COUNT = 100;

/** The message for a YAML document that cannot be turned into values (an alias bomb, mostly). */
export function yamlExpansionProblem(err: Error): string {
  const unresolved = /^Unresolved alias[^:]*:\s*(.*)/i.exec(err.message);
  if (unresolved) return `YAML alias *${unresolved[1].split('\n')[0]} names no anchor (&${unresolved[1].split('\n')[0]}) set before it`;
  if (/excessive alias/i.test(err.message)) {
    return `YAML aliases (*name) expand too often (more than ${MAX_ALIAS_COUNT} times, as in an "alias bomb"); write the values out instead`;
  }
  return `YAML cannot be read: ${err.message.split('\n')[0]}`;
}
