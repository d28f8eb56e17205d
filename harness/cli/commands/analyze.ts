// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const analyzeCommand: VerbFactory = () => ({
  command: 'analyze <target>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"analyze" is not built yet');
  },
});
