import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONVERSATION_ENGINE } from '../../../shared/adapters/analysis/conversation-analyser.ts';
import { selectAnalyser } from '../../../shared/adapters/analysis/select-analyser.ts';
import { SALES_CALL } from './fixtures.ts';

test('no analyseUrl (absent or blank): the built-in conversation analyser', async () => {
  for (const config of [{}, { analyseUrl: '  ', analyseModel: 'gpt-4o-mini', analyseApiKey: 'sk-unused' }]) {
    const analyser = selectAnalyser(config);
    assert.match(analyser.describe(), /built-in conversation analyser/);
    assert.equal((await analyser.analyse({ transcript: SALES_CALL })).engine, CONVERSATION_ENGINE);
  }
});

test('analyseUrl set: the OpenAI-compatible analyser for that model and host, the key kept out of describe()', () => {
  const analyser = selectAnalyser({
    analyseUrl: 'https://llm.internal:8443/v1',
    analyseModel: 'llama-3.1-8b',
    analyseApiKey: 'sk-secret-value',
  });
  assert.equal(analyser.describe(), 'OpenAI-compatible analyser (model llama-3.1-8b at https://llm.internal:8443)');
  assert.ok(!analyser.describe().includes('sk-secret-value'));
});

test('analyseUrl without analyseModel, or not an http(s) URL, fails at startup', () => {
  assert.throws(
    () => selectAnalyser({ analyseUrl: 'https://llm.internal' }),
    /analyseModel \(ANALYSE_MODEL\) is required/,
  );
  assert.throws(() => selectAnalyser({ analyseUrl: 'not a url', analyseModel: 'm' }), TypeError);
});
