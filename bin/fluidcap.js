#!/usr/bin/env node
// The installed entry point: registers tsx so the TypeScript sources run as they are, then hands
// over to the CLI, which alone reads argv and sets the exit code.
import { register } from 'tsx/esm/api';

register();
await import('../harness/cli/main.ts');
