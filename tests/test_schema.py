"""The JSON Schema shipped as package data: the examples reference it, validate against it, and the loader takes its
keys from it."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
import yaml

from conftest import EXAMPLES, ROOT
from projector import gates, load

SCHEMA = json.loads(resources.files("projector").joinpath("schemas/workflow.schema.json").read_text("utf-8"))
EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


def test_schema_is_a_valid_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.name)
def test_every_example_validates_and_references_the_schema(path):
    text = path.read_text("utf-8")
    assert text.startswith("# yaml-language-server: $schema=../projector/schemas/workflow.schema.json\n")
    assert (path.parent / "../projector/schemas/workflow.schema.json").resolve().is_file()
    jsonschema.Draft202012Validator(SCHEMA).validate(yaml.safe_load(text))


def test_acknowledgeable_codes_agree():
    assert tuple(SCHEMA["$defs"]["step"]["properties"]["acknowledge"]["propertyNames"]["enum"]) == \
        gates.ACKNOWLEDGEABLE


@pytest.mark.parametrize("case", ["unknown-key", "wrong-type", "alias", "duplicate-key"])
def test_schema_and_loader_both_refuse_shape_errors(case):
    path = ROOT / "tests" / "bad_inputs" / f"{case}.yaml"
    _, diags = load.parse(path.read_bytes(), path.name)
    assert any(d.code == case for d in diags)
    if case in ("unknown-key", "wrong-type"):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.Draft202012Validator(SCHEMA).validate(yaml.safe_load(path.read_text()))


def test_the_schema_lists_exactly_the_operators_of_the_one_table():
    """A condition operator is one entry of conditions.OPERATORS plus its key here: the schema's condition keys
    beyond the subject, its one-of-the-operators list and each operand's type agree with the table, in its order."""
    from projector.conditions import OPERATORS

    condition = SCHEMA["$defs"]["condition"]
    operators = [k for k in condition["properties"] if k not in ("arg", "step", "field")]
    assert operators == list(OPERATORS)
    [subject, exactly_one] = condition["allOf"]
    assert subject == {"oneOf": [{"required": ["arg"]}, {"required": ["step"]}]}
    assert [branch["required"] for branch in exactly_one["oneOf"]] == [[name] for name in OPERATORS]
    schema_type = {"value": None, "list": "array", "bool": "boolean"}
    assert {k: condition["properties"][k].get("type") for k in operators} == \
        {name: schema_type[op.operand] for name, op in OPERATORS.items()}
    assert all(op.name == name for name, op in OPERATORS.items())
