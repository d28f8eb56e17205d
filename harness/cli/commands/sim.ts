// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const simCommand: VerbFactory = () => ({
  command: 'sim',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"sim" is not built yet');
  },
});
