"""gnoctl.fastjson must agree with the stdlib json module, byte for byte."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnoctl import fastjson

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=30
)


@settings(max_examples=300, deadline=None)
@given(values)
def test_dumps_matches_stdlib(obj):
    assert fastjson.dumps(obj) == json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    assert fastjson.dumps(obj, indent=2) == json.dumps(obj, ensure_ascii=False, indent=2)


@settings(max_examples=300, deadline=None)
@given(values)
def test_loads_roundtrips_stdlib_output(obj):
    assert fastjson.loads(json.dumps(obj)) == obj
    assert fastjson.loads(json.dumps(obj, indent=1).encode()) == obj


@pytest.mark.parametrize("bad", ["", "{", "[1,]", "{'a': 1}", "nul", '"unterminated', "1 2", '{"a":1}x'])
def test_loads_rejects_invalid(bad):
    with pytest.raises(ValueError):
        fastjson.loads(bad)


def test_special_floats_and_keys():
    assert fastjson.dumps([math.inf, -math.inf]) == "[Infinity,-Infinity]"
    assert math.isnan(fastjson.loads("NaN"))
    keys = {1: "a", None: "b", False: "c", 2.5: "d"}  # non-string keys, as the json module writes them
    assert fastjson.dumps(keys) == json.dumps(keys, separators=(",", ":"))
    with pytest.raises(TypeError):
        fastjson.dumps({"a": object()})
