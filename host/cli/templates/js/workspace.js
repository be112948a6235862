// Reading the workspace from a Roost plugin. A call sees the workspace
// read-only at `/workspace` (and each directory it may write as a
// preopen of its own below it), through WASI's filesystem: there is no
// Node `fs` inside the sandbox.

import { getDirectories } from 'wasi:filesystem/preopens@0.2.12';

/** A failure the model sees: `code` is one of Roost's error codes. */
export class ToolError {
  constructor(code, message) {
    this.code = code;
    this.message = message;
  }
}

/** The preopened directory holding workspace-relative `rel`, and the path in it. */
function locate(rel) {
  const parts = [];
  for (const p of rel.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') {
      if (parts.length === 0) throw new ToolError('permission-denied', `${rel}: path leaves the workspace`);
      parts.pop();
    } else {
      parts.push(p);
    }
  }
  const full = ['/workspace', ...parts].join('/');
  let best;
  for (const [dir, guest] of getDirectories()) {
    if ((full === guest || full.startsWith(guest + '/')) && (!best || guest.length > best[1].length)) {
      best = [dir, guest];
    }
  }
  if (!best) throw new ToolError('permission-denied', `${rel}: this call has no access to the workspace`);
  return [best[0], full.slice(best[1].length + 1)];
}

/** The text of workspace file `rel`. */
export function readText(rel) {
  const [dir, inner] = locate(rel);
  try {
    const file = dir.openAt({ symlinkFollow: false }, inner, {}, { read: true });
    const chunks = [];
    let offset = 0n;
    for (;;) {
      const [bytes, eof] = file.read(65536n, offset);
      chunks.push(bytes);
      offset += BigInt(bytes.length);
      if (eof || bytes.length === 0) break;
    }
    return new TextDecoder().decode(concat(chunks));
  } catch (e) {
    if (e instanceof ToolError) throw e;
    // WASI's error, e.g. 'no-entry', is in `e.payload`.
    if (e && e.payload === 'no-entry') throw new ToolError('not-found', `${rel}: no such file`);
    if (e && (e.payload === 'access' || e.payload === 'not-permitted')) {
      throw new ToolError('permission-denied', `${rel}: outside this call's grant`);
    }
    throw new ToolError('internal', `${rel}: ${e && e.payload ? e.payload : e}`);
  }
}

function concat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let i = 0;
  for (const c of chunks) {
    out.set(c, i);
    i += c.length;
  }
  return out;
}
