"""The whole suite's pytest setup: tests/support's asserts report like a test's."""

import pytest

# The shared helpers in tests/support assert what they build (a recorded baseline, a
# loaded YAML file); rewritten, a failing assert there shows its values, as it did
# when the helpers lived in test modules.
pytest.register_assert_rewrite("support")
