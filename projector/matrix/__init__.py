"""The three-surface harness behind ``project-skill matrix`` and the docs site's decision matrix.

- :mod:`.reader`: reads a generated SKILL.md back into a procedure and follows it, one request per step;
- :mod:`.policy`: the deterministic policy that stands in for the model's judgment;
- :mod:`.agent`: the server-side agent tool (surface C), composing each run from a lock made at set-up;
- :mod:`.serve`: the measured server (the demo server plus the agent), on stdio;
- :mod:`.harness`: runs every task, surface and scenario over stdio and records what went over the wire;
- :mod:`.cli`: the command;
- :mod:`.evalruns`: the derived eval cases on the workflow prompt, the workflow tool (plain and as a task), the skill
  and the agent (simulated), each against its own server (:mod:`projector.server.evalcase`), graded from what the
  server recorded;
- :mod:`.taskrun`: a workflow tool called as an MCP task, as a client of the Tasks extension drives it (the eval
  runs' task surface and the harness's B3t);
- :mod:`.evals_inspect`: the same cases run by Inspect AI on a model (the ``evals`` extra).
"""
