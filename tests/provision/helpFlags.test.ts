// An engine's own --help read into its flag set (argparse as vLLM prints it, llama.cpp's layout),
// and a vLLM launch written for the version its image reports and checked against its help. No
// vLLM image can run here: its --help and version are FAKE, shaped like vLLM 0.8.5's and newest's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseHelpFlags, unknownFlags, versionLine, helpIsSummary } from '../../harness/provision/helpFlags.ts';
import { specForImage } from '../../harness/provision/launcher.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import type { ImageFacts } from '../../harness/provision/imageFacts.ts';

const ARGPARSE = `usage: api_server.py [-h] [--host HOST] [--port PORT]
                     [--model MODEL] [--enable-chunked-prefill | --no-enable-chunked-prefill]

options:
  -h, --help            show this help message and exit
  --host HOST           Host name.
  --disable-log-requests
                        Disable logging requests.
  -tp TENSOR_PARALLEL_SIZE, --tensor-parallel-size TENSOR_PARALLEL_SIZE
                        Number of tensor parallel replicas.
  --enable-chunked-prefill, --no-enable-chunked-prefill
                        If set, the prefill requests can be chunked based on the
                        max_num_batched_tokens. See --foo-in-text for details.
  --load-format {auto,pt,safetensors,dummy}
                        The format of the model weights to load.
`;

const LLAMA = `----- common params -----

-h,    --help, --usage                  print usage and exit
--version                               show version and build info
-t,    --threads N                      number of threads to use during generation (default: -1)
-np,   --parallel N                     number of parallel sequences to decode (default: 1)
--cache-prompt, --no-cache-prompt       whether to enable prompt caching (default: enabled)
-cram, --cache-ram N                    set the maximum cache size in MiB (default: 8192, -1 - no limit)
`;

test('argparse help (vLLM): options, short forms, --no- forms, multi-line entries; words in descriptions are not flags', () => {
  const flags = parseHelpFlags(ARGPARSE);
  for (const f of ['-h', '--help', '--host', '--disable-log-requests', '-tp', '--tensor-parallel-size', '--enable-chunked-prefill', '--no-enable-chunked-prefill', '--load-format', '--port', '--model']) {
    assert.ok(flags.has(f), f);
  }
  assert.not.ok(flags.has('--foo-in-text'), 'a flag named inside a description');
  assert.equal(unknownFlags(['--host', '0.0.0.0', '--tensor_parallel_size', '1', '--max-num-seqs', '8', '--load-format=dummy'], flags, 'vllm'), ['--max-num-seqs']);
});

test("llama.cpp's help layout and its --version line", () => {
  const flags = parseHelpFlags(LLAMA);
  for (const f of ['-np', '--parallel', '-cram', '--cache-ram', '--no-cache-prompt', '-t', '--threads', '--version']) assert.ok(flags.has(f), f);
  assert.equal(unknownFlags(['--tensor_parallel_size', '2'], flags, 'llamacpp'), ['--tensor_parallel_size']);
  assert.is(versionLine('load_backend: loaded CPU backend\nversion: 6123 (abcdef0)\nbuilt with cc\n'), '6123 (abcdef0)');
  assert.is(versionLine('INFO 05-01 [__init__.py] Automatically detected platform cpu.\n0.8.5\n'), '0.8.5');
  assert.ok(helpIsSummary('Use --help=all to show all options'));
});

// FAKE image facts: vLLM itself cannot run here.
const fakeVllm = (version: string, flags: string[]): ImageFacts => ({ image: 'vllm/vllm-openai:latest', imageId: 'sha256:00', family: 'vllm', version, flags });
const VLLM_085 = [...parseHelpFlags(ARGPARSE), '--gpu-memory-utilization', '--max-num-seqs', '--max-model-len', '--max-num-batched-tokens', '--enable-prefix-caching', '--no-enable-prefix-caching'];

test('a vLLM image of unknown tag: argv and env written for the version it reports, then checked against its help (FAKE image facts)', () => {
  const target = targetSchema.parse({ engine: 'vllm', image: 'vllm/vllm-openai:latest', model: 'meta-llama/Meta-Llama-3-8B', engineArgs: { loadFormat: 'dummy' } });
  const spec = renderContainerSpec(target, { runId: 'r' })!;
  const on085 = specForImage(spec, fakeVllm('0.8.5', VLLM_085));
  assert.is(on085.env.VLLM_USE_V1, '0');
  assert.ok(on085.argv.includes('--disable-log-requests'));
  assert.equal(on085.basis.versionSource, 'image');
  // A 0.10.2-like image whose help no longer lists --disable-log-requests: not passed, V0 still pinned.
  const newer = specForImage(spec, fakeVllm('0.10.2', VLLM_085.filter((f) => f !== '--disable-log-requests')));
  assert.not.ok(newer.argv.includes('--disable-log-requests'));
  assert.is(newer.env.VLLM_USE_V1, '0');
  assert.throws(() => specForImage(spec, fakeVllm('0.12.1', VLLM_085)), /vLLM 0\.12\.1 \(read from the image\), image vllm\/vllm-openai:latest no longer has/);
  assert.throws(() => specForImage(spec, fakeVllm('0.8.5', VLLM_085.filter((f) => f !== '--max-num-seqs'))), (e: Error) =>
    e.message.startsWith('image vllm/vllm-openai:latest (vllm 0.8.5) does not know the flag --max-num-seqs: its own --help does not list it'));
  assert.throws(() => specForImage(spec, fakeVllm('nightly', VLLM_085)), /printed no vLLM version/);
});

test.run();
