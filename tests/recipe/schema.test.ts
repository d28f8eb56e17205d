// The committed JSON Schema for editors must be the one generated from the loader's zod schema,
// and it must accept every committed recipe and reject a misspelt field, as the loader does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { recipeJsonSchemaText } from '../../harness/recipe/jsonSchema.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const committed = readFileSync(join(ROOT, 'recipes/recipe.schema.json'), 'utf8');

function recipeFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return recipeFiles(path);
    return name.endsWith('.yaml') ? [path] : [];
  });
}

test('recipes/recipe.schema.json is up to date with the zod definition (npm run schema)', () => {
  assert.is(committed, recipeJsonSchemaText());
});

test('every committed recipe validates against the JSON Schema', () => {
  const validate = new Ajv2020({ strict: false, allErrors: true }).compile(JSON.parse(committed));
  const files = recipeFiles(join(ROOT, 'recipes'));
  assert.ok(files.length >= 1, 'no recipes found');
  for (const file of files) {
    const ok = validate(parse(readFileSync(file, 'utf8')));
    assert.ok(ok, `${file}: ${JSON.stringify(validate.errors)}`);
  }
});

test('the JSON Schema rejects a misspelt field and a wrong type, like the loader', () => {
  const validate = new Ajv2020({ strict: false }).compile(JSON.parse(committed));
  const recipe = parse(readFileSync(join(ROOT, 'recipes/quickstart.yaml'), 'utf8'));
  assert.not.ok(validate({ ...recipe, serach: {} }));
  assert.not.ok(validate({ ...recipe, search: { ...recipe.search, maxProbes: 'many' } }));
});

test.run();
