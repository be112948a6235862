// The plugin's own logic, plain JavaScript: unit-tested with `npm test`
// (node:test), no sandbox needed.

/** The number of words in `text`. */
export function countWords(text) {
  return text.split(/\s+/).filter(Boolean).length;
}
