#!/usr/bin/env node
// The installed entry point. Runs the compiled JavaScript in dist/ (built by `npm ci` through the
// `prepare` script, or `npm run build`) when it was built from exactly the sources on disk; else
// registers tsx and runs the TypeScript sources, so a stale dist/ never runs older code.
// FLUIDCAP_FROM_SOURCE=1 always runs the sources. The CLI alone reads argv and sets the exit code.
import { distIsCurrent } from './sourcesHash.js';

if (process.env.FLUIDCAP_FROM_SOURCE !== '1' && distIsCurrent()) {
  await import('../dist/cli/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../harness/cli/main.ts');
}
