// A server named with a path (a gateway's `/openai/v1`) keeps that path for every route; a trailing
// /v1 is the OpenAI routes' prefix, so `/tokenize` and `/metrics` sit beside it, not under it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { serverRoot, serverUrl } from '../../harness/load/serverUrl.ts';

test('routes stay under the path the server was named by', () => {
  assert.is(serverUrl('https://api.example.com/openai/v1', '/v1/chat/completions').href, 'https://api.example.com/openai/v1/chat/completions');
  assert.is(serverUrl('https://api.example.com/openai/v1/', '/v1/models').href, 'https://api.example.com/openai/v1/models');
  assert.is(serverUrl('https://api.example.com/openai', '/v1/models').href, 'https://api.example.com/openai/v1/models');
  assert.is(serverUrl('https://api.example.com/openai/v1', '/tokenize').href, 'https://api.example.com/openai/tokenize');
  assert.is(serverUrl('http://10.0.0.5:8000', '/metrics').href, 'http://10.0.0.5:8000/metrics');
  assert.is(serverUrl('http://10.0.0.5:8000/v1', '/v1/completions').href, 'http://10.0.0.5:8000/v1/completions');
  assert.is(serverUrl('http://[::1]:8000/', '/health').href, 'http://[::1]:8000/health');
});

test('the root drops the query, trailing slashes and one trailing /v1 only', () => {
  assert.is(serverRoot('http://h:1/a/v1//?x=1'), 'http://h:1/a');
  assert.is(serverRoot('http://h:1/v1/v1'), 'http://h:1/v1');
  assert.is(serverRoot('http://h:1/v10'), 'http://h:1/v10');
  assert.is(serverRoot('http://h:1'), 'http://h:1');
});

test.run();
