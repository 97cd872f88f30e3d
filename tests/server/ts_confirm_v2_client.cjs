// The TypeScript SDK v2 client (@modelcontextprotocol/client) on protocol 2026-07-28 makes a list of calls (workflow
// prompts, workflow tools, plain tools) in one session, answering every elicitation request (a confirm:) as told: its
// driver retries the request with inputResponses and the echoed requestState (an InputRequiredResult, on prompts/get
// and on tools/call alike). Prints one JSON object:
//   {results: [{asked: [message...], messages: [{role, text}]}            for a prompt
//              {asked: [message...], content, structuredContent, isError}  for a tool
//              ...]}                                                       one per call, in order
// Usage: node ts_confirm_v2_client.cjs CLIENT_DIR ANSWER CALLS http URL
//        node ts_confirm_v2_client.cjs CLIENT_DIR ANSWER CALLS stdio COMMAND [ARG...]
//   ANSWER: yes | no | decline | cancel | none (none: the client declares no elicitation, so it cannot be asked)
//   CALLS:  a JSON list of {"prompt": NAME, "arguments": {...}} or {"tool": NAME, "arguments": {...}}
// (CLIENT_DIR: a folder whose node_modules holds @modelcontextprotocol/client)
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

function transportFor(req, kind, target) {
  if (kind === "http") {
    const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/client");
    return new StreamableHTTPClientTransport(new URL(target[0]));
  }
  if (kind === "stdio") {
    const { StdioClientTransport } = req("@modelcontextprotocol/client/stdio");
    return new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "ignore" });
  }
  throw new Error(`unknown transport ${kind}`);
}

async function main() {
  const [clientDir, answer, callsJson, kind, ...target] = process.argv.slice(2);
  if (!["yes", "no", "decline", "cancel", "none"].includes(answer)) throw new Error(`unknown answer ${answer}`);
  const calls = JSON.parse(callsJson);
  const req = createRequire(path.join(path.resolve(clientDir), "package.json"));
  const { Client } = req("@modelcontextprotocol/client");
  const capabilities = answer === "none" ? {} : { elicitation: { form: {} } };
  const client = new Client({ name: "projector-ts-v2-confirm", version: "0.0.0" },
                            { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
  let asked = [];
  if (answer !== "none") {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      if (answer === "yes") return { action: "accept", content: { confirm: true } };
      if (answer === "no") return { action: "accept", content: { confirm: false } };
      return { action: answer };
    });
  }
  await client.connect(transportFor(req, kind, target));
  const results = [];
  for (const call of calls) {
    asked = [];
    const arguments_ = call.arguments || {};
    if (call.prompt !== undefined) {
      const result = await client.getPrompt({ name: call.prompt, arguments: arguments_ });
      results.push({ asked, messages: result.messages.map((m) => ({ role: m.role, text: m.content.text })) });
    } else {
      const result = await client.callTool({ name: call.tool, arguments: arguments_ });
      results.push({ asked, content: result.content, structuredContent: result.structuredContent ?? null,
                     isError: result.isError ?? false });
    }
  }
  process.stdout.write(JSON.stringify({ results }) + "\n");
  await client.close();
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
