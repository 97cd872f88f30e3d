// The official TypeScript SDK client against a skills server: list every skill (following cursors), then read each
// SKILL.md. Prints one JSON object: {protocolVersion, extensions, skills, files: {uri: text}}.
// Usage: node ts_skills_client.cjs SDK_DIR URL    (SDK_DIR: a folder whose node_modules holds @modelcontextprotocol/sdk)
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

async function main() {
  const [sdkDir, url] = process.argv.slice(2);
  const req = createRequire(path.join(path.resolve(sdkDir), "package.json"));
  const { Client } = req("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = req("@modelcontextprotocol/sdk/client/streamableHttp.js");
  const { z } = req("zod");
  const client = new Client({ name: "projector-ts-check", version: "0.0.0" },
                            { capabilities: { extensions: { "io.modelcontextprotocol/skills": {} } } });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const any = z.object({}).passthrough();
  const skills = [];
  let cursor;
  do {
    const page = await client.request({ method: "skills/list", params: cursor ? { cursor } : {} }, any);
    skills.push(...page.skills);
    cursor = page.nextCursor;
  } while (cursor);
  const files = {};
  for (const s of skills) {
    const read = await client.readResource({ uri: s.uri });
    files[s.uri] = read.contents.map((c) => c.text).join("");
  }
  const caps = client.getServerCapabilities() || {};
  process.stdout.write(JSON.stringify({ protocolVersion: transport.protocolVersion || null,
                                        extensions: caps.extensions || null, skills, files }) + "\n");
  await client.close();
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
