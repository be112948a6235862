// A Roost tool plugin in JavaScript: `tool.tools()` lists the tools (with
// the JSON schema of their arguments), `tool.call(name, args)` runs one.
// Build it with `npm run build`; see README.md.

import { countWords } from './words.js';
import { ToolError, readText } from './workspace.js';

// The name the model calls: prefixed with the plugin's, so it clashes with no
// other plugin's. plugin.toml lists it under `tools` (Roost checks the names
// before compiling the component); keep the two in step.
const TOOL_NAME = '__TOOL_NAME__';

const TOOLS = [
  {
    name: TOOL_NAME,
    description: 'Count the words of a workspace text file',
    argsSchema: JSON.stringify({
      type: 'object',
      properties: { path: { type: 'string', description: 'Workspace-relative path of a text file' } },
      required: ['path'],
    }),
    group: 'read', // read | edit | command | browser | mcp | modes
    destructive: false,
    pathArgs: ['path'], // checked against the task's scope before the call
    annotations: { title: 'Count words', idempotent: true, openWorld: false },
  },
];

function countWordsTool(args) {
  if (typeof args.path !== 'string') throw new ToolError('invalid-args', '`path` must be a string');
  return { text: `${countWords(readText(args.path))} words`, data: undefined };
}

export const tool = {
  tools() {
    return TOOLS;
  },
  // May be async (`await fetch(...)` reaches the hosts the plugin was granted).
  async call(name, raw) {
    try {
      const args = JSON.parse(raw);
      if (name === TOOL_NAME) return countWordsTool(args);
      throw new ToolError('not-found', `unknown tool: ${name}`);
    } catch (e) {
      // The WIT error is thrown as a record {code, message}.
      if (e instanceof ToolError) throw { code: e.code, message: e.message };
      throw { code: 'invalid-args', message: String(e) };
    }
  },
};
