"""Beam's own stateful DoFn tests (apache_beam/transforms/userstate_test.py, issue 18) run in
tests/test_beam_suite.py, on every mode of the local runner and, those whose pipeline takes
the test pipeline's options, on Spark batch and streaming (tests/beam_suite.py ON_RUNNERS).
Here: what the module imports of Beam's internals fails, naming it, where a test uses it."""
from __future__ import annotations

import pytest

import beam_compat

MODULE = "apache_beam.transforms.userstate_test"


@pytest.fixture(scope="module")
def userstate_test():
    return beam_compat.load([MODULE], lenient=[MODULE])[MODULE]


def test_a_beam_internal_the_module_imports_fails_naming_it_when_used(userstate_test):
    with pytest.raises(NotImplementedError, match=r"Beam's apache_beam\.runners\.common\."
                                                  r"DoFnSignature"):
        userstate_test.DoFnSignature(userstate_test.TestStatefulDoFn())
