"""Hypothesis strategies: JSON values, structured answers, documents damaged at any path."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from passk_action.core.model import object_text

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities too: Python's json reads them from NaN/Infinity
    | st.sampled_from([0, 1, 2, 2.0, 1.5, -1, "", "main", "deny", "sha256:" + "0" * 64])
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside a JSON document, the root excluded."""
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        yield (*prefix, key)
        yield from paths(child, (*prefix, key))


def mutate(doc: Any, path: tuple[Any, ...], how: str, new: Any) -> Any:
    """A deep copy of ``doc`` with the value at ``path`` replaced, deleted or wrapped."""
    doc = json.loads(json.dumps(doc))
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    if how == "delete":
        del parent[key]
    elif how == "wrap":
        parent[key] = [parent[key]]
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(json.loads(json.dumps(parent[key])))
    else:
        parent[key] = new
    return doc


hows = st.sampled_from(["replace", "replace", "delete", "wrap", "duplicate"])


def mutated(doc: Any) -> st.SearchStrategy[Any]:
    all_paths = list(paths(doc))

    @st.composite
    def build(draw: st.DrawFn) -> Any:
        current = doc
        for _ in range(draw(st.integers(min_value=1, max_value=2))):
            targets = list(paths(current)) or all_paths
            path = draw(st.sampled_from(targets))
            current = mutate(current, path, draw(hows), draw(json_values))
        return current

    return build()


finite_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
"""JSON values passk can store: an answer, a field's value."""
structured = st.dictionaries(st.text(max_size=6), finite_json, max_size=3).map(object_text)
