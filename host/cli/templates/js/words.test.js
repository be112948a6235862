import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countWords } from '../src/words.js';

test('counts words', () => {
  assert.equal(countWords('one two\nthree'), 3);
  assert.equal(countWords('  '), 0);
});
