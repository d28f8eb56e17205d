// Writes recipes/recipe.schema.json, the JSON Schema editors use to complete and check recipes,
// from the same zod definition the loader validates with (so the two cannot disagree).
// `npm run schema` rewrites it; tests/recipe/schema.test.ts fails when it is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { recipeJsonSchemaText } from '../harness/recipe/jsonSchema.ts';

const out = fileURLToPath(new URL('../recipes/recipe.schema.json', import.meta.url));
writeFileSync(out, recipeJsonSchemaText());
console.log(`wrote ${out}`);
