import pytest

# tests/helpers.py holds shared assertion helpers; let pytest rewrite their asserts too
pytest.register_assert_rewrite("tests.helpers")
