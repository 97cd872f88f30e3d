"""Deterministic synthetic workflow sets for the benchmarks.

``generate(n, seed)`` returns ``{file name: YAML bytes}`` for ``n`` workflows of 3 to 8 steps each. Every workflow
is valid under WORKFLOW-FORMAT.md version 1 and, taken together, a set uses every data-source kind (``arg``,
``step``, ``step`` + ``field``, ``const`` with and without ``{placeholders}``), guidance (plain, and gate-like
guidance on side-effecting tools, some of it acknowledged), instructions, resource-only steps with templates,
and every kind of tool annotation (read-only, side-effecting, destructive, none at all). Some of them therefore
produce warnings, as real workflow sets do; the benchmark never runs with ``--strict``.

The same ``(n, seed)`` gives the same bytes on every machine: only ``random.Random(seed)`` decides, names are
numbered, and the YAML text is written here line by line rather than by a dumper whose style could change.
Run ``python bench/workgen.py N OUT_DIR [--seed S]`` to write a set to a folder.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

DOMAINS = ("orders", "refunds", "invoices", "tickets", "shipments", "accounts", "catalog", "inventory", "payroll",
           "reviews", "bookings", "claims", "leads", "devices", "builds", "incidents", "contracts", "surveys")
VERBS = ("process", "review", "reconcile", "escalate", "audit", "sync", "archive", "triage", "approve", "export",
         "migrate", "refresh", "summarize", "verify", "close", "reopen")
NOUNS = ("record", "batch", "customer", "entry", "report", "item", "request", "case", "profile", "document",
         "message", "note", "schedule", "quote", "task", "account")
FIELDS = ("id", "total", "status", "region", "owner.email", "items.0.sku", "items.0.quantity", "meta.version",
          "address.country", "lines.1.amount", "summary", "created_by.name")
ARG_TYPES = ("string", "number", "integer", "boolean", None)
WORDS = ("the", "customer", "order", "current", "policy", "team", "record", "latest", "value", "account", "region",
         "status", "request", "history", "owner", "summary", "quarter", "report", "ledger", "queue", "ticket",
         "result", "amount", "note", "schedule", "priority", "change", "review")
# Plain guidance: none of these reads like a gate (projector.gates would not fire on them).
PLAIN_GUIDANCE = (
    "Summarize the result in two sentences for the user.",
    "Keep the identifiers exactly as the tool returns them.",
    "Mention the total and the currency in the reply.",
    "Group the rows by region and show the three largest.",
    "Quote the status field verbatim; it is shown to the customer.",
)
# Gate-like guidance: on a side-effecting tool each of these fires gate-on-side-effect.
GATE_GUIDANCE = (
    "Only continue if the previous step reports the record as eligible.",
    "Do not call this tool unless the user has given written approval.",
    "Verify that the amount matches the ledger before you go on.",
    "Skip this step when the account is already closed.",
)
ROLES = ("system", "user", "assistant")
SCHEMES = ("docs", "kb", "policy", "files", "db")


def _q(value: object) -> str:
    """A YAML scalar: JSON text is valid YAML and never ambiguous (quotes, colons, braces, unicode)."""
    return json.dumps(value, ensure_ascii=False)


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(lo, hi))]
    return (" ".join(words)).capitalize() + "."


def _source(src: dict) -> str:
    """A data source as a one-line flow mapping."""
    return "{" + ", ".join(f"{k}: {_q(v)}" for k, v in src.items()) + "}"


# The prompt-argument types that can feed a parameter of each type (an untyped argument is a string).
FEEDS = {"string": ("string", None), "number": ("number", "integer"), "integer": ("integer",), "boolean": ("boolean",),
         "object": ()}


def _pick_source(rng: random.Random, args: list[dict], binds: list[str], kinds: tuple[str, ...],
                 typ: str | None = None) -> dict:
    """A source that fits a parameter of type ``typ`` (None: any), as `project-skill build` checks."""
    kind = rng.choice(kinds)
    fitting = args if typ is None else [a for a in args if a["type"] in FEEDS[typ]]
    if kind in ("step", "field") and not binds:
        kind = "arg" if fitting else "const"
    if kind == "arg" and not fitting:
        kind = "const"
    if kind == "arg":
        return {"arg": rng.choice(fitting)["name"]}
    if kind == "step":
        return {"step": rng.choice(binds)}
    if kind == "field":
        return {"step": rng.choice(binds), "field": rng.choice(FIELDS)}
    # const: a string with an {argname} placeholder or a plain string, a number, a boolean or a small object
    if typ in ("string", None):
        if rng.randrange(2) == 0:
            return {"const": f"{rng.choice(NOUNS)}-{{{rng.choice(args)['name']}}}"}
        return {"const": rng.choice(WORDS)}
    if typ in ("number", "integer"):
        return {"const": rng.randint(1, 500)}
    if typ == "boolean":
        return {"const": rng.random() < 0.5}
    return {"const": {"limit": rng.randint(1, 100), "order": rng.choice(("asc", "desc"))}}


def workflow(rng: random.Random, index: int) -> str:
    """One workflow file's text."""
    domain, verb, noun = rng.choice(DOMAINS), rng.choice(VERBS), rng.choice(NOUNS)
    name = f"{verb}_{domain}_{noun}_{index:05d}"
    lines = [
        "# yaml-language-server: $schema=../projector/schemas/workflow.schema.json",
        f"name: {name}",
        f"description: {_q(f'{verb.capitalize()} a {noun} in {domain}: ' + _sentence(rng, 8, 20))}",
        "arguments:",
    ]
    args = []
    for i in range(rng.randint(1, 4)):
        arg = {"name": f"{rng.choice(NOUNS)}_{i}", "required": rng.random() < 0.6, "type": rng.choice(ARG_TYPES)}
        args.append(arg)
        lines += [f"  - name: {arg['name']}", f"    description: {_q(_sentence(rng, 4, 12))}"]
        if arg["required"]:
            lines.append("    required: true")
        if arg["type"]:
            lines.append(f"    type: {arg['type']}")
    if rng.random() < 0.6:
        lines.append("instructions:")
        for _ in range(rng.randint(1, 2)):
            lines += [f"  - role: {rng.choice(ROLES)}", f"    text: {_q(_sentence(rng, 10, 30))}"]

    n_steps = rng.randint(3, 8)
    # Which steps read resources only; the first step always calls a tool so later steps have a binding.
    resource_only = [i > 0 and rng.random() < 0.25 for i in range(n_steps)]
    tools = []
    for i in range(n_steps):
        if resource_only[i]:
            continue
        effect = rng.choices(("read", "write", "destroy", "none"), weights=(60, 22, 15, 3))[0]
        props = [f"{rng.choice(NOUNS)}_{j}" for j in range(rng.randint(1, 4))]
        tools.append({"name": f"{verb}_{noun}_tool_{i}", "effect": effect, "props": props,
                      "types": {p: rng.choice(("string", "number", "integer", "boolean", "object")) for p in props}})
    lines.append("tools:")
    for t in tools:
        lines += [f"  - name: {t['name']}", f"    description: {_q(_sentence(rng, 6, 18))}", "    input_schema:",
                  "      type: object", "      properties:"]
        for p in t["props"]:
            typ = t["types"][p]
            lines.append(f"        {p}: {{type: {typ}, description: {_q(_sentence(rng, 3, 8))}}}")
        lines.append(f"      required: [{', '.join(t['props'][:1])}]")
        ann = {"read": "{readOnlyHint: true, idempotentHint: true}",
               "write": "{readOnlyHint: false, destructiveHint: false}",
               "destroy": "{readOnlyHint: false, destructiveHint: true}"}.get(t["effect"])
        if ann:
            lines.append(f"    annotations: {ann}")

    lines.append("steps:")
    by_name = {t["name"]: t for t in tools}
    binds: list[str] = []
    for i in range(n_steps):
        step_name = f"step_{i + 1}_{rng.choice(VERBS)}"
        lines.append(f"  - name: {step_name}")
        if resource_only[i]:
            scheme = rng.choice(SCHEMES)
            uris, template = [], {}
            for k in range(rng.randint(1, 2)):
                if rng.random() < 0.8:
                    var = f"{rng.choice(('region', 'key', 'version', 'lang'))}_{k}"
                    template[var] = _pick_source(rng, args, binds, ("arg", "field", "const"))
                    uris.append(f"{scheme}://{domain}/{noun}/{{{var}}}")
                else:
                    uris.append(f"{scheme}://{domain}/{noun}/overview")
            lines.append(f"    resources: [{', '.join(_q(u) for u in uris)}]")
            if template:
                lines.append("    template:")
                lines += [f"      {var}: {_source(src)}" for var, src in template.items()]
            if rng.random() < 0.3:
                lines.append(f"    guidance: {_q(rng.choice(PLAIN_GUIDANCE))}")
            continue
        tool = by_name[f"{verb}_{noun}_tool_{i}"]
        lines += [f"    tool: {tool['name']}", "    args:"]
        for p in tool["props"]:
            src = _pick_source(rng, args, binds, ("arg", "step", "field", "const"), tool["types"][p])
            lines.append(f"      {p}: {_source(src)}")
        side_effecting = tool["effect"] in ("write", "destroy")
        if side_effecting and rng.random() < 0.3:
            lines.append(f"    guidance: {_q(rng.choice(GATE_GUIDANCE))}")
            if rng.random() < 0.7:
                lines += ["    acknowledge:",
                          f"      gate-on-side-effect: {_q('The tool enforces this itself: ' + _sentence(rng, 4, 9))}"]
        elif rng.random() < 0.35:
            lines.append(f"    guidance: {_q(rng.choice(PLAIN_GUIDANCE))}")
        bind = f"{noun}_result_{i + 1}"
        binds.append(bind)
        lines.append(f"    bind: {bind}")
    return "\n".join(lines) + "\n"


def generate(n: int, seed: int = 2640) -> dict[str, bytes]:
    """``n`` workflow files, ``{file name: bytes}``, sorted by name. Same arguments, same bytes."""
    rng = random.Random(f"projector-bench:{seed}:{n}")
    width = max(5, len(str(n)))
    return {f"wf-{i:0{width}d}.yaml": workflow(rng, i).encode("utf-8") for i in range(n)}


def revise(files: dict[str, bytes]) -> dict[str, bytes]:
    """The same workflows (same files, same names) with every description reworded: what a rebuild after an edit to
    every workflow sees. Every SKILL.md, every references/tools.md and skills.json change."""
    return {name: data.replace(b'description: "', b'description: "Revised: ') for name, data in files.items()}


def write_set(n: int, out: Path, seed: int = 2640) -> Path:
    """Write a set of ``n`` workflows into ``out`` (created); returns ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    for name, data in generate(n, seed).items():
        (out / name).write_bytes(data)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="write a deterministic synthetic workflow set")
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=2640)
    a = ap.parse_args(argv)
    write_set(a.n, Path(a.out), a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
