// Drive `bundlekit mcp` over stdio with the TypeScript SDK's own client (npm @modelcontextprotocol/sdk);
// print what it saw as one JSON object. Used by test_typescript_sdk.py; the SDK is never committed.
// Usage: node ts_sdk_client.mjs NODE_MODULES TREE PYTHON REPO
// The SDK's Client parses every result with its own schemas and checks each structuredContent
// against the tool's outputSchema (a mismatch throws), so an "ok" below is the SDK's verdict.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [modules, tree, python, repo] = process.argv.slice(2);
const sdk = (path) => import(pathToFileURL(join(modules, "@modelcontextprotocol/sdk/dist/esm", path)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "bundlekit", "mcp", "--memory", tree],
  env: { ...process.env, PYTHONPATH: repo, CI: "true" },
  stderr: "ignore",
});
const client = new Client({ name: "bundlekit-ts-check", version: "1" });
await client.connect(transport);

const out = { tools: {}, calls: [], resources: {} };
for (const tool of (await client.listTools()).tools) {
  out.tools[tool.name] = { annotations: tool.annotations ?? null, input: tool.inputSchema, output: tool.outputSchema ?? null };
}
const calls = [
  ["memory_write", { key: "ts_probe", name: "P", description: "d", type: "project", body: "b", tags: ["t"] }],
  ["memory_show", { key: "ts_probe" }],
  ["memory_note", { type: "decision", data: { summary: "x", n: 2 } }],
  ["memory_forget", { key: "ts_probe" }],
  ["memory_write", { key: "ts_bad", name: "P", description: "d", type: "diary", body: "b" }],
];
for (const [name, args] of calls) {
  try {
    const result = await client.callTool({ name, arguments: args });
    out.calls.push({ name, outcome: result.isError ? "tool error" : "ok", fields: Object.keys(result.structuredContent ?? {}) });
  } catch (error) {
    out.calls.push({ name, outcome: "threw", code: error.code ?? null, message: String(error.message) });
  }
}
for (const uri of ["memory://ghost", "memory://timeline/yesterday"]) {
  try {
    await client.readResource({ uri });
    out.resources[uri] = { code: null };
  } catch (error) {
    out.resources[uri] = { code: error.code ?? null, message: String(error.message) };
  }
}
out.prompts = (await client.listPrompts()).prompts;
console.log(JSON.stringify(out));
await client.close();
