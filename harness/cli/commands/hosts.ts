// Placeholder until the verb's issue lands; replaced by its owner.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';

export const hostsCommand: VerbFactory = () => ({
  command: 'hosts',
  describe: '(not built yet)',
  handler: () => {
    throw new UserError('"hosts" is not built yet');
  },
});
