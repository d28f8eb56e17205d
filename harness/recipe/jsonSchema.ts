// The recipe's JSON Schema (draft 2020-12) for editors, generated from the validating zod schema.
// Input side: durations accept `25ms` or seconds, exactly as a recipe file may write them.
import { z } from 'zod';
import { recipeSchema } from './parse.ts';

type Node = Record<string, unknown>;

/**
 * The workload loader infers two discriminators from the keys before validating (`lengths.kind`,
 * and `dist`, which a bare token count also implies); the generated schema must not demand them.
 */
function relaxInferredDiscriminators(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(relaxInferredDiscriminators);
  if (node === null || typeof node !== 'object') return;
  const n = node as Node;
  const union = (n.oneOf ?? n.anyOf) as Node[] | undefined;
  const key = union && ['kind', 'dist'].find((k) => union.every((m) => (m.properties as Node | undefined)?.[k] !== undefined));
  if (union && key) {
    for (const member of union) {
      member.required = (member.required as string[]).filter((r) => r !== key);
      if (key === 'kind') delete (member.properties as Node).kind;
    }
    if (key === 'dist') union.push({ type: 'integer', exclusiveMinimum: 0, description: 'a fixed token count' });
    delete n.oneOf;
    n.anyOf = union;
  }
  Object.values(n).forEach(relaxInferredDiscriminators);
}

/** The schema as pretty JSON text, ending with a newline (the committed file's exact content). */
export function recipeJsonSchemaText(): string {
  const schema = z.toJSONSchema(recipeSchema, { io: 'input', unrepresentable: 'any' }) as Node;
  relaxInferredDiscriminators(schema);
  const withMeta = {
    $schema: schema.$schema,
    $id: 'https://fluidcap.dev/schemas/recipe.schema.json',
    title: 'fluidcap recipe',
    description: 'A capacity-planning recipe: target engine, workload, prefill profile, QPS search and SLO.',
    ...schema,
  };
  return JSON.stringify(withMeta, null, 2) + '\n';
}
