// The TypeScript SDK v2 client (@modelcontextprotocol/client) on protocol 2026-07-28 gets the workflow prompt
// refund_flow_approved, answering its elicitation requests (the confirmation) as told: its driver retries with
// inputResponses and the echoed requestState. Prints one JSON object: {asked: [message...], messages: [{role, text}]}.
// Usage: node ts_confirm_v2_client.cjs CLIENT_DIR URL ANSWER ORDER_ID   (ANSWER: yes | no | decline | cancel | none)
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

async function main() {
  const [clientDir, url, answer, orderId] = process.argv.slice(2);
  const req = createRequire(path.join(path.resolve(clientDir), "package.json"));
  const { Client, StreamableHTTPClientTransport } = req("@modelcontextprotocol/client");
  const capabilities = answer === "none" ? {} : { elicitation: { form: {} } };
  const client = new Client({ name: "projector-ts-v2-confirm", version: "0.0.0" },
                            { capabilities, versionNegotiation: { mode: { pin: "2026-07-28" } } });
  const asked = [];
  if (answer !== "none") {
    client.setRequestHandler("elicitation/create", async (request) => {
      asked.push(request.params.message);
      if (answer === "yes") return { action: "accept", content: { confirm: true } };
      if (answer === "no") return { action: "accept", content: { confirm: false } };
      return { action: answer };
    });
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const result = await client.getPrompt({ name: "refund_flow_approved",
                                          arguments: { order_id: orderId, reason: "broken" } });
  const refunds = await client.callTool({ name: "list_refunds", arguments: {} });
  process.stdout.write(JSON.stringify({ asked, refunds: refunds.structuredContent,
    messages: result.messages.map((m) => ({ role: m.role, text: m.content.text })) }) + "\n");
  await client.close();
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
