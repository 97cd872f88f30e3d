// The TypeScript SDK v2 client (@modelcontextprotocol/client) on protocol 2026-07-28, through its SkillsClient: list
// every skill, read (and so verify) every file of each, and read every directory of each skill, walking down into
// sub-directories. Prints one JSON object:
//   {protocolVersion, directoryRead, skills, files: {uri: base64}, directories: {uri: {resources, ttlMs, cacheScope}}}
// Usage: node ts_skills_v2_client.cjs CLIENT_DIR http URL
//        node ts_skills_v2_client.cjs CLIENT_DIR stdio COMMAND [ARG...]
// (CLIENT_DIR: a folder whose node_modules holds @modelcontextprotocol/client)
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

async function main() {
  const [clientDir, kind, ...target] = process.argv.slice(2);
  const req = createRequire(path.join(path.resolve(clientDir), "package.json"));
  const { Client, StreamableHTTPClientTransport } = req("@modelcontextprotocol/client");
  const { SkillsClient, DIRECTORY_MIME_TYPE } = req("@modelcontextprotocol/client/ext/skills");
  let transport;
  if (kind === "http") {
    transport = new StreamableHTTPClientTransport(new URL(target[0]));
  } else if (kind === "stdio") {
    const { StdioClientTransport } = req("@modelcontextprotocol/client/stdio");
    transport = new StdioClientTransport({ command: target[0], args: target.slice(1), stderr: "ignore" });
  } else {
    throw new Error(`unknown transport ${kind}`);
  }
  const client = new Client({ name: "projector-ts-v2-check", version: "0.0.0" },
                            { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  await client.connect(transport);
  const skills = new SkillsClient(client);
  const listing = await skills.list();
  const files = {};
  const directories = {};
  for (const skill of listing.skills) {
    for (const entry of skill.resources) {
      const file = await skills.read(skill, entry.uri); // throws SkillVerificationError on any mismatch
      files[entry.uri] = Buffer.from(file.bytes).toString("base64");
    }
    const pending = [skill.uri.slice(0, -"/SKILL.md".length)];
    while (pending.length) {
      const uri = pending.shift();
      const dir = await skills.readDirectory(uri); // the result schema requires ttlMs and cacheScope
      directories[uri] = dir;
      for (const child of dir.resources) {
        if (child.mimeType === DIRECTORY_MIME_TYPE) pending.push(child.uri);
      }
    }
  }
  process.stdout.write(JSON.stringify({
    protocolVersion: client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() || null : null,
    directoryRead: skills.directoryRead, skills: listing.skills, ttlMs: listing.ttlMs ?? null,
    cacheScope: listing.cacheScope ?? null, files, directories }) + "\n");
  await client.close();
}

main().catch((err) => { process.stderr.write(String(err && err.stack || err) + "\n"); process.exit(1); });
