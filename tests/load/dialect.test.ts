// The dialect decisions on the error answers strict servers send: Sarathi-Serve's pydantic list
// printed as Python text, FastAPI's JSON `detail` array, a hosted API's plain message, and
// Sarathi-Serve's token-id refusal. A 400 that names nothing fluidcap added is refused, not retried.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { describeDialect, namedInError, nextStep, outputPinned, sentFields, type Dialect } from '../../harness/load/dialect.ts';
import { requestBody } from '../../harness/load/prompt.ts';
import { strictRefusal } from '../../harness/sim/strictOpenai.ts';

const ALL = sentFields({ omitFields: [], promptFormat: 'token-ids' }, true);
const fresh: Dialect = { omitFields: [], promptFormat: 'token-ids' };

// What Sarathi-Serve answers (sarathi/entrypoints/openai/api_server.py: str(RequestValidationError) in an ErrorResponse).
const SARATHI_EXTRA = JSON.stringify({
  object: 'error',
  message:
    "[{'type': 'extra_forbidden', 'loc': ('body', 'min_tokens'), 'msg': 'Extra inputs are not permitted', 'input': 8}, " +
    "{'type': 'extra_forbidden', 'loc': ('body', 'stream_options', 'continuous_usage_stats'), 'msg': 'Extra inputs are not permitted', 'input': True}, " +
    "{'type': 'extra_forbidden', 'loc': ('body', 'timings_per_token'), 'msg': 'Extra inputs are not permitted', 'input': True}]",
  type: 'BadRequestError',
  param: null,
  code: 400,
});

test('pydantic list text: every field it names, stream_options kept when only its member is named', () => {
  const named = namedInError(SARATHI_EXTRA, ALL, true);
  assert.equal(named.fields.sort(), ['min_tokens', 'stream_options.continuous_usage_stats', 'timings_per_token']);
  assert.is(named.prompt, false);
});

test('FastAPI 422 detail array: loc arrays name the field', () => {
  const body = JSON.stringify({ detail: [{ type: 'extra_forbidden', loc: ['body', 'ignore_eos'], msg: 'Extra inputs are not permitted', input: true }] });
  assert.equal(namedInError(body, ALL, true), { fields: ['ignore_eos'], prompt: false });
  const step = nextStep(fresh, true, { status: 422, body });
  assert.is(step.kind, 'retry');
  if (step.kind === 'retry') assert.equal(step.dialect, { omitFields: ['ignore_eos'], promptFormat: 'token-ids' });
});

test("a hosted API's plain message names the field", () => {
  const body = JSON.stringify({ error: { message: 'Unrecognized request argument supplied: min_tokens', type: 'invalid_request_error', param: null, code: null } });
  assert.equal(namedInError(body, ALL, false).fields, ['min_tokens']);
  // Not JSON at all: the text itself is read.
  assert.equal(namedInError('unknown field "timings_per_token"', ALL, false).fields, ['timings_per_token']);
});

test('a field named but not sent is not ours to drop; max_tokens is not min_tokens', () => {
  const body = JSON.stringify({ error: { message: 'max_tokens must be at least 1' } });
  assert.equal(namedInError(body, ALL, true), { fields: [], prompt: false });
  const notSent = sentFields({ omitFields: ['min_tokens'], promptFormat: 'text' }, false);
  assert.equal(namedInError(SARATHI_EXTRA, notSent, false).fields, []);
});

test('stream_options refused as a whole: dropped with its member', () => {
  const body = JSON.stringify({ detail: [{ type: 'extra_forbidden', loc: ['body', 'stream_options'], msg: 'Extra inputs are not permitted' }] });
  const step = nextStep(fresh, true, { status: 400, body });
  assert.is(step.kind, 'retry');
  if (step.kind !== 'retry') return;
  assert.equal(step.dialect.omitFields, ['stream_options']);
  const sent = JSON.parse(requestBody({ api: 'completions', model: 'm', format: 'text', seed: 1, continuousUsage: true, omitFields: step.dialect.omitFields }, 0, 8, 4)) as Record<string, unknown>;
  assert.is(sent.stream_options, undefined);
  assert.is(sent.min_tokens, 4);
});

test("token-id prompts refused (Sarathi-Serve's message, pydantic's loc) → text; only when ids were sent", () => {
  const sarathi = JSON.stringify({ object: 'error', message: 'array of tokens, or array of token arrays not supported', type: 'BadRequestError', param: null, code: 400 });
  const step = nextStep({ omitFields: ['min_tokens'], promptFormat: 'token-ids' }, true, { status: 400, body: sarathi });
  assert.is(step.kind, 'retry');
  if (step.kind === 'retry') assert.equal(step.dialect, { omitFields: ['min_tokens'], promptFormat: 'text' });
  const pydantic = JSON.stringify({ detail: [{ type: 'string_type', loc: ['body', 'prompt'], msg: 'Input should be a valid string', input: [1, 2, 3] }] });
  assert.is(namedInError(pydantic, ALL, true).prompt, true);
  assert.is(namedInError(pydantic, ALL, false).prompt, false);
  assert.is(nextStep({ omitFields: [], promptFormat: 'text' }, true, { status: 400, body: sarathi }).kind, 'refuse');
});

test('a 400 about the prompt that is not its form (length, vocabulary) is not a dialect', () => {
  const long = JSON.stringify({ error: { message: "This model's maximum context length is 2048 tokens. However, your request has 4000 input tokens. Please reduce the length of the input prompt." } });
  assert.is(nextStep(fresh, true, { status: 400, body: long }).kind, 'refuse');
  const oov = JSON.stringify({ error: { message: 'Token id 40000 is out of vocabulary (vocabulary size 32000)' } });
  assert.is(nextStep(fresh, true, { status: 400, body: oov }).kind, 'refuse');
});

test('a 400 naming nothing of ours is refused with its text, not retried; other statuses too', () => {
  const body = JSON.stringify({ object: 'error', message: "[{'type': 'missing', 'loc': ('body', 'model'), 'msg': 'Field required', 'input': {}}]", code: 400 });
  const step = nextStep(fresh, true, { status: 400, body });
  assert.is(step.kind, 'refuse');
  if (step.kind === 'refuse') {
    assert.match(step.message, /HTTP 400 naming nothing fluidcap adds/);
    assert.match(step.message, /Field required/);
  }
  const again = nextStep({ omitFields: ['min_tokens', 'timings_per_token'], promptFormat: 'text' }, true, { status: 400, body });
  assert.ok(again.kind === 'refuse' && /already without min_tokens, timings_per_token\)/.test(again.message));
  assert.is(nextStep(fresh, true, { status: 500, body: 'boom' }).kind, 'refuse');
  assert.is(nextStep(fresh, true, { status: 200, body: '' }).kind, 'accepted');
});

test("a 'missing' error that echoes the whole body as its input names nothing: refused, not retried", () => {
  const echoed = "{'model': 'm', 'prompt': 'a b', 'max_tokens': 2, 'min_tokens': 2, 'ignore_eos': True, 'timings_per_token': True}";
  const repr = JSON.stringify({ object: 'error', message: `[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required', 'input': ${echoed}}]`, code: 400 });
  assert.equal(namedInError(repr, ALL, false), { fields: [], prompt: false });
  assert.is(nextStep(fresh, true, { status: 400, body: repr }).kind, 'refuse');
  const detail = JSON.stringify({ detail: [{ type: 'missing', loc: ['body', 'messages'], msg: 'Field required', input: { min_tokens: 2, ignore_eos: true } }] });
  assert.is(nextStep(fresh, true, { status: 422, body: detail }).kind, 'refuse');
});

test('output length: pinned while min_tokens or ignore_eos is sent; the description says what changed', () => {
  assert.is(outputPinned([]), true);
  assert.is(outputPinned(['min_tokens']), true);
  assert.is(outputPinned(['min_tokens', 'ignore_eos']), false);
  const both = describeDialect({ omitFields: ['min_tokens', 'ignore_eos'], promptFormat: 'text' }, 'token-ids');
  assert.match(both, /without min_tokens, ignore_eos/);
  assert.match(both, /prompts are text/);
  assert.match(both, /output length is no longer pinned/);
  assert.match(describeDialect({ omitFields: ['min_tokens'], promptFormat: 'text' }, 'text'), /pinned by ignore_eos alone/);
});

test("the simulated strict server's answers are read as the decisions expect", () => {
  const body = JSON.parse(requestBody({ api: 'completions', model: 'm', format: 'token-ids', seed: 1, continuousUsage: true }, 0, 8, 4)) as unknown;
  const refusal = strictRefusal('completions', body)!;
  assert.match(JSON.parse(refusal).message as string, /^\[\{'type': 'extra_forbidden', 'loc': \('body', 'min_tokens'\), 'msg': 'Extra inputs are not permitted', 'input': 4\}/);
  const step = nextStep(fresh, true, { status: 400, body: refusal });
  assert.ok(step.kind === 'retry');
  // Sarathi-Serve declares ignore_eos: it is kept, so output length stays pinned.
  if (step.kind === 'retry') assert.equal(step.dialect.omitFields, ['min_tokens', 'timings_per_token', 'stream_options.continuous_usage_stats']);
});

test.run();
