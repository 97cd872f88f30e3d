"""projector: compile MCP sequential workflows into byte-stable SEP-2640 SKILL.md bundles.

The core API (no ``mcp`` import):

- :func:`projector.load.load_file` / :func:`projector.load.load_all`: YAML workflow files to the model.
- :class:`projector.builder.WorkflowBuilder`: the same model, built in code.
- :func:`projector.render.project`: one workflow to its bundle's bytes, with warnings as data.
- :func:`projector.output.compile_workflows`, :func:`projector.output.write`, :func:`projector.output.compare`, and
  for the derived eval cases' own tree :func:`projector.output.write_evals`, :func:`projector.output.compare_evals`.
"""

__version__ = "0.1.0"
