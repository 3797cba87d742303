"""Beam's own stateful DoFn tests run on pomset unmodified but for the import (issue 18):
apache_beam/transforms/userstate_test.py from the pinned apache-beam wheel, with
`apache_beam` read as `pomset` (tests/beam_compat.py).

Run here, one pytest test each:

- StatefulDoFnOnDirectRunnerTest, every test but one: bag, set, read-modify-write and
  combining state, clearing each, watermark timers, two timers on one callback, timer output
  timestamps and windows, the default and dynamic timer tags (set, clear, clear then set,
  several), processing-time timers on a TestStream (test_generate_sequence_with_realtime_timer),
  index assignment, a hash join, and a stateful DoFn on input that is not keyed (an error).
  They run on every mode of the local runner (sequential, threads, processes: most record
  what they see into a list of the test class, which the steps after a stateful one do in
  the test's process); the two whose pipeline is checked with assert_that and takes the
  test pipeline's options also run on Spark batch and Spark streaming.
- InterfaceTest: test_spec_construction, test_param_construction,
  test_stateful_dofn_detection and test_validation_typos (the errors a mistaken DoFn gets).

Not run, as they test Beam's internals, which pomset has no counterpart of (the module
imports them at the top; here those names are placeholders that fail, naming them, if used):
test_stateful_set_state_compaction_race_portably (Beam's gRPC state handler), and
InterfaceTest's test_validate_dofn, test_good_signatures and test_bad_signatures (Beam's
DoFnSignature) and test_state_spec_proto_conversion (runner API protos)."""
from __future__ import annotations

import pytest

import beam_compat
from conftest import runner_flags
from pomset.testing.test_pipeline import TestPipeline

MODULE = "apache_beam.transforms.userstate_test"
ON_RUNNER = [
    "test_simple_stateful_dofn", "test_clearing_bag_state", "test_two_timers_one_function",
    "test_simple_read_modify_write_stateful_dofn", "test_clearing_read_modify_write_state",
    "test_simple_set_stateful_dofn", "test_clearing_set_state",
    "test_stateful_set_state_portably", "test_stateful_set_state_clean_portably",
    "test_stateful_dofn_nonkeyed_input", "test_generate_sequence_with_realtime_timer",
    "test_simple_stateful_dofn_combining", "test_timer_output_timestamp",
    "test_timer_output_timestamp_and_window", "test_timer_default_tag",
    "test_dynamic_timer_simple_dofn", "test_dynamic_timer_clear_then_set_timer",
    "test_dynamic_timer_clear_timer", "test_dynamic_timer_multiple",
    "test_dynamic_timer_and_simple_timer", "test_index_assignment", "test_hash_join",
]
INTERFACE = ["test_spec_construction", "test_param_construction",
             "test_stateful_dofn_detection", "test_validation_typos"]
CASES = ([("userstate_test", "StatefulDoFnOnDirectRunnerTest", m) for m in ON_RUNNER]
         + [("userstate_test", "InterfaceTest", m) for m in INTERFACE])
#: pipelines checked with assert_that that take the test pipeline's options run on Spark too
LOCAL_ONLY = set(ON_RUNNER + INTERFACE) - {"test_stateful_set_state_portably",
                                          "test_dynamic_timer_clear_then_set_timer"}


@pytest.fixture(scope="module")
def userstate_test():
    return beam_compat.load([MODULE], lenient=[MODULE])[MODULE]


RUNNERS = ("local", "local-sequential", "local-threads", "local-processes", "spark",
           "spark-streaming")


@pytest.mark.parametrize("module,cls,method,runner",
                         list(beam_compat.test_params(CASES, LOCAL_ONLY, {}, RUNNERS)))
def test_beam_test(userstate_test, request, monkeypatch, module, cls, method, runner):
    if runner.startswith("spark"):
        request.getfixturevalue("spark_session")
    monkeypatch.setattr(TestPipeline, "pytest_test_pipeline_options",
                        " ".join(runner_flags(runner)))
    beam_compat.run_beam_test(userstate_test, cls, method)


def test_the_selected_tests_are_beams(userstate_test):
    assert {(c, m) for _, c, m in CASES} <= set(beam_compat.beam_test_methods(userstate_test))


def test_a_beam_internal_the_module_imports_fails_naming_it_when_used(userstate_test):
    with pytest.raises(NotImplementedError, match=r"Beam's apache_beam\.runners\.common\."
                                                  r"DoFnSignature"):
        userstate_test.DoFnSignature(userstate_test.TestStatefulDoFn())
