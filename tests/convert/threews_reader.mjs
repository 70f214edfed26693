// Reads a three.ws export blob or localStorage dump with three.ws's own memory runtime
// (src/memory/index.js of nirholas/three.ws, copied by the test into a scratch folder outside this
// repository: their code is not committed here). Our code, not theirs.
//
//   node threews_reader.mjs RUNTIME_DIR INPUT.json
//
// A blob goes through the runtime's import() (which rebuilds the index), a dump through
// Memory.load in `local` mode (which keeps the stored index). Prints, as JSON, each file's name
// and description as the runtime's read() parses them, and the index text it holds.
import path from 'node:path';
import { readFileSync } from 'node:fs';

const store = new Map();
globalThis.localStorage = {
	getItem: (k) => (store.has(k) ? store.get(k) : null),
	setItem: (k, v) => store.set(k, String(v)),
};
const { Memory } = await import(path.resolve(process.argv[2], 'index.js'));
const input = JSON.parse(readFileSync(process.argv[3], 'utf8'));
let mem;
if (input.version) {
	mem = new Memory({ mode: 'local', namespace: 'reader' });
	await mem.import(input, { strategy: 'replace' });
} else {
	const [key] = Object.keys(input);
	store.set(key, input[key]);
	mem = await Memory.load({ mode: 'local', namespace: key.split(':')[1] });
}
const files = {};
for (const file of mem.files.keys()) {
	const { meta } = mem.read(file);
	files[file] = { name: meta.name, description: meta.description };
}
console.log(JSON.stringify({ files, index: mem.indexText }));
