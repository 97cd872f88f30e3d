// The Tasks extension's own client (@modelcontextprotocol/ext-tasks, on the TypeScript SDK v2 client, protocol
// 2026-07-28) calls one tool over Streamable HTTP. It declares the extension on the call; when the server answers
// with a task it polls tasks/get, answers each elicitation in inputRequests (a confirm:) through tasks/update, and
// reads the settled result. Then, in the same session, it calls each tool of AFTER as a plain call. Prints one JSON:
//   {kind: "task" | "immediate", asked: [message...], statuses: [status...], outcome: "completed" | ...,
//    result: CallToolResult, after: [CallToolResult...]}
// Usage: node ts_tasks_client.mjs PEER_DIR URL TOOL ARGUMENTS ANSWER [AFTER]
//   ANSWER: yes | no (the confirm: answered accept with {confirm: true | false})
//   AFTER:  a JSON list of tool names, called after the task with no arguments (e.g. ["list_refunds"])
// (PEER_DIR: a folder whose node_modules holds @modelcontextprotocol/ext-tasks and @modelcontextprotocol/client)
//
// The SDK client's codecs reject a CreateTaskResult, so the extension's client asks the host for a raw request path
// (rawDispatch): here one JSON-RPC POST per request, with the routing headers of 2026-07-28 (Mcp-Method, and Mcp-Name:
// the tool's name on tools/call, the task id on tasks/*). Every read is bounded (MAX_BODY) and every wait timed.
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const PROTOCOL = "2026-07-28";
const MAX_BODY = 16 * 1024 * 1024;
const TIMEOUT_MS = 60_000;

// The package's ESM entry, from its package.json "exports" (the "import" condition), so that ext-tasks and this
// script load the one same @modelcontextprotocol/client module.
async function load(peerDir, pkg, sub = ".") {
  const dir = path.join(path.resolve(peerDir), "node_modules", pkg);
  const exported = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf-8")).exports[sub];
  const entry = typeof exported.import === "string" ? exported.import : exported.import.default;
  return import(pathToFileURL(path.join(dir, entry)).href);
}

async function readBody(response) {
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_BODY) throw new Error(`a response over ${MAX_BODY} bytes`);
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf-8");
}

// The JSON-RPC response to request `id`: the body itself, or the matching `data:` event of an SSE stream.
function responseFor(id, text, contentType) {
  if (!contentType.includes("text/event-stream")) return JSON.parse(text);
  for (const event of text.split(/\r?\n\r?\n/)) {
    const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
    if (data.length === 0) continue;
    const message = JSON.parse(data.join("\n"));
    if (message.id === id) return message;
  }
  throw new Error(`no response to request ${id} in the event stream`);
}

function rawDispatcher(url) {
  let nextId = 0;
  return async (request, options = {}) => {
    const id = `ext-tasks-${++nextId}`;
    const body = { ...request, jsonrpc: "2.0", id };
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream",
                      "mcp-protocol-version": PROTOCOL, "mcp-method": request.method };
    if (request.method === "tools/call") headers["mcp-name"] = request.params.name;
    else if (request.method.startsWith("tasks/")) headers["mcp-name"] = request.params.taskId;
    const signal = options.signal ? AbortSignal.any([options.signal, AbortSignal.timeout(TIMEOUT_MS)])
      : AbortSignal.timeout(TIMEOUT_MS);
    const response = await fetch(url, { method: "POST", headers, body: JSON.stringify(body), signal });
    const text = await readBody(response);
    const message = responseFor(id, text, response.headers.get("content-type") || "");
    if (message.error !== undefined) return { kind: "error", error: message.error };
    return { kind: "result", result: message.result };
  };
}

async function main() {
  const [peerDir, url, tool, argumentsJson, answer, afterJson] = process.argv.slice(2);
  if (!["yes", "no"].includes(answer)) throw new Error(`unknown answer ${answer}`);
  const { Client, StreamableHTTPClientTransport } = await load(peerDir, "@modelcontextprotocol/client");
  const { createTaskSessionFromClient, resultFromTaskOutcome } =
    await load(peerDir, "@modelcontextprotocol/ext-tasks", "./client");

  const clientInfo = { name: "projector-ext-tasks", version: "0.0.0" };
  const capabilities = { elicitation: { form: {} } };
  const client = new Client(clientInfo, { capabilities, versionNegotiation: { mode: { pin: PROTOCOL } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));

  const asked = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: url,
    rawDispatch: rawDispatcher(url),
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo, clientCapabilities: capabilities },
    onInputRequest: async (request) => {
      if (request.kind !== "elicitation") throw new Error(`unexpected input request ${request.kind}`);
      asked.push(request.params.message);
      return { action: "accept", content: { confirm: answer === "yes" } };
    },
  });
  const out = { kind: null, asked, statuses: [], outcome: null, result: null, after: [] };
  try {
    const execution = await session.callTool(tool, JSON.parse(argumentsJson), { task: { preference: "require" } });
    out.kind = execution.kind;
    const seen = (event) => {  // each task state the client observed, once per change
      if (event.type === "task" && out.statuses[out.statuses.length - 1] !== event.task.status)
        out.statuses.push(event.task.status);
    };
    const { outcome } = await execution.settle({ signal: AbortSignal.timeout(TIMEOUT_MS), onEvent: seen });
    out.outcome = outcome.status;
    out.result = resultFromTaskOutcome(outcome);
    for (const name of JSON.parse(afterJson || "[]")) {
      const plain = await session.callTool(name, {}, { task: { preference: "forbid" } });
      const settled = await plain.settle({ signal: AbortSignal.timeout(TIMEOUT_MS) });
      out.after.push(resultFromTaskOutcome(settled.outcome));
    }
  } finally {
    await session.close();
    await client.close();
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => { process.stderr.write(String((err && err.stack) || err) + "\n"); process.exit(1); });
