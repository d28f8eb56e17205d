// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const reportCommand: VerbFactory = () => ({
  command: 'report <runDir>',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"report" is not built yet');
  },
});
