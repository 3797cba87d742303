"""What tests/test_beam_suite.py expects of each of Beam's unit-test modules (issue 60), in
one place, by module (as in beam_src.SUITE) and then by test (`Class.method`):

- DESELECTED: tests of Beam's own internals (runner API protos, PipelineContext, DisplayData,
  DoFnSignature, GeneralTriggerDriver, core.Windowing, Create's source, runners.*), not run,
  each with the reason;
- DIFFERENCES: tests whose answer pomset gives differently on purpose (it follows Beam Java,
  or checks more), strict expected failures, each with the reason and a test of pomset's
  own answer beside it;
- GAPS: tests that fail because pomset lacks what they use; strict expected failures, so a
  test that starts passing must leave this list. `<load>`: the module does not load.

Every other test must pass. `python tests/beam_coverage.py` prints the counts."""
from __future__ import annotations

from typing import Dict, Set, Tuple

#: tests that drive Beam's GeneralTriggerDriver (with InMemoryUnmergedState) directly
TRIGGER_DRIVER = "Beam's GeneralTriggerDriver, its in-process trigger driver"
DESELECTED: Dict[str, Dict[str, str]] = {
    "transforms/combiners_test": {
        "CombineTest.test_basic_combiners_display_data": "DisplayData of the transform",
        "CombineTest.test_combine_globally_display_data": "DisplayData of the transform",
        "CombineTest.test_combine_per_key_top_display_data": "DisplayData of the transform",
        "CombineTest.test_combine_sample_display_data": "DisplayData of the transform",
    },
    "transforms/util_test": {
        "GroupIntoBatchesTest.test_runner_api": "runner API protos (to/from_runner_api)",
    },
    "transforms/ptransform_test": {
        "PTransformTestDisplayData.test_filter_anonymous_function": "DisplayData (Beam internal)",
        "PTransformTestDisplayData.test_filter_named_function": "DisplayData (Beam internal)",
        "PTransformTestDisplayData.test_flatmap_anonymous_function": "DisplayData (Beam internal)",
        "PTransformTestDisplayData.test_flatmap_named_function": "DisplayData (Beam internal)",
        "PTransformTestDisplayData.test_map_anonymous_function": "DisplayData (Beam internal)",
        "PTransformTestDisplayData.test_map_named_function": "DisplayData (Beam internal)",
    },
    "transforms/core_test": {
    },
    "transforms/window_test": {
        "RunnerApiTest.test_windowfn_encoding": "runner API protos, PipelineContext",
        "RunnerApiTest.test_windowing_encoding": "runner API protos, core.Windowing",
    },
    "transforms/trigger_test": {
        "TriggerTest.test_fixed_watermark": TRIGGER_DRIVER,
        "TriggerTest.test_fixed_watermark_with_early": TRIGGER_DRIVER,
        "TriggerTest.test_fixed_watermark_with_early_late": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_watermark_with_early_late": TRIGGER_DRIVER,
        "TriggerTest.test_fixed_after_count": TRIGGER_DRIVER,
        "TriggerTest.test_fixed_after_first": TRIGGER_DRIVER,
        "TriggerTest.test_repeatedly_after_first": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_after_all": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_default": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_watermark": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_after_count": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_repeatedly_after_count": TRIGGER_DRIVER,
        "TriggerTest.test_sessions_after_each": TRIGGER_DRIVER,
        "TriggerTest.test_picklable_output": "Beam's BatchGlobalTriggerDriver, its batch driver",
        "RunnerApiTest.test_trigger_encoding": "runner API protos (to/from_runner_api)",
        "TriggerDriverTranscriptTest.test_fixed_default": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_fixed_default_late_data": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_fixed_drop_late_data_after_allowed_lateness":
            TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_timestamp_combiner_earliest": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_timestamp_combiner_latest": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_timestamp_combiner_custom_timestamping_eow":
            TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_timestamp_combiner_custom_timestamping_earliest":
            TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_timestamp_combiner_custom_timestamping_earliest_1":
            TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_early_late_sessions": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_discarding_early_fixed": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_garbage_collection": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_known_late_data_watermark": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_known_late_data_no_watermark_hold_possible":
            TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_bad_output": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_bad_expected_values": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_bad_expected_window": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_missing_output": TRIGGER_DRIVER,
        "TriggerDriverTranscriptTest.test_missing_output_at_end": TRIGGER_DRIVER,
    },
    "transforms/sideinputs_test": {
    },
    "transforms/create_test": {
        "CreateTest.test_create_source_dynamic_splitting":
            "Create._create_source_from_iterable, Beam's internal source",
        "CreateTest.test_create_source_progress":
            "Create._create_source_from_iterable, Beam's internal source",
        "CreateTest.test_create_source_read":
            "Create._create_source_from_iterable, Beam's internal source",
        "CreateTest.test_create_source_read_reentrant":
            "Create._create_source_from_iterable, Beam's internal source",
        "CreateTest.test_create_source_read_reentrant_with_initial_splits":
            "Create._create_source_from_iterable, Beam's internal source",
        "CreateTest.test_create_source_read_with_initial_splits":
            "Create._create_source_from_iterable, Beam's internal source",
    },
    "transforms/stats_test": {
        "ApproximateQuantilesTest.test_global_display_data": "DisplayData of the transform",
        "ApproximateQuantilesTest.test_perkey_display_data": "DisplayData of the transform",
    },
    "transforms/deduplicate_test": {
    },
    "transforms/userstate_test": {
        "InterfaceTest.test_bad_signatures": "DoFnSignature (runners.common)",
        "InterfaceTest.test_good_signatures": "DoFnSignature (runners.common)",
        "InterfaceTest.test_validate_dofn": "DoFnSignature (runners.common)",
        "InterfaceTest.test_state_spec_proto_conversion": "runner API protos, PipelineContext",
        "StatefulDoFnOnDirectRunnerTest.test_stateful_set_state_compaction_race_portably":
            "runners.worker: Beam's gRPC state handler",
    },
    "transforms/combinefn_lifecycle_test": {
    },
    "testing/util_test": {
    },
    "testing/test_stream_test": {
        "TestStreamTest.test_roundtrip_proto": "runner API protos (to/from_runner_api)",
        "TestStreamTest.test_roundtrip_proto_multi": "runner API protos (to/from_runner_api)",
        "ReverseTestStreamTest.test_basic_execution_in_records_format":
            "runner API protos (beam_interactive_api_pb2 TestStreamFileRecord)",
        "TestStreamTest.test_instance_check_windowed_value_holder":
            "runner API: common_urns.coders.ROW (a WindowedValueHolder as a Beam Row)",
        "TestStreamTest.test_basic_execution_with_service":
            "runners.direct's TestStreamServiceController and event protos",
    },
    "pvalue_test": {
    },
    "pipeline_test": {
        "RunnerApiTest.test_annotations":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_beam_context_annotations":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_coder_version_tag_included_in_runner_api_key":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_display_data":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_environments_are_deduplicated":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_environments_with_same_resource_hints_are_reused":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_hints_on_composite_transforms_are_propagated_to_subtransforms":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_input_names":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_multiple_application_of_the_same_transform_set_different_hints":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_multiple_outputs_composite_ptransform":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_parent_pointer":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_pipeline_context_annotations":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_requirements":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_runner_api_roundtrip_preserves_resource_hints":
            "runner API protos, PipelineContext, environments, hints",
        "RunnerApiTest.test_transform_ids":
            "runner API protos, PipelineContext, environments, hints",
        "PipelineTest.test_visit_entire_graph": "PipelineVisitor over Beam's internal graph",
        "PipelineTest.test_incompatible_submission_and_runtime_envs_fail_pipeline":
            "Beam's SDK container environments (transforms.environments)",
        "PipelineTest.test_runner_overrides_default_pickler":
            "mocks runners.runner.PipelineRunner's pickler override (dill)",
        "PipelineOptionsTest.test_dir":
            "dir() of options as Beam's: its DisplayData and runner API methods (display_data, "
            "to_runner_api, from_runner_api, from_dictionary, is_compat_version_prior_to)",
    },
}

#: pomset's end of time is -2**62 µs, Beam's -2**63 µs; tests that compute a window from it
MIN_WINDOW = ("the test computes the FixedWindows(20) window of MIN_TIMESTAMP from Beam's "
              "constant (-2**63 µs); pomset's is -2**62 µs, so its window differs "
              "(tests/test_testing_matchers.py::test_equal_to_per_window_on_pomset)")
#: BatchTranscriptTest skips itself for these transcripts, on any runner
BATCH_LATE = "skips itself: 'Batch mode never has late data.'"
BATCH_DISCARDING = "skips itself: 'Batch mode only makes sense for accumulating.'"
BATCH_TRANSFORMED = ("skips itself: 'Non-fnapi timestamp combiner: "
                     "OUTPUT_AT_EARLIEST_TRANSFORMED'")
#: why pomset's trigger answers differ from Beam Python's (it follows Beam Java)
PER_ELEMENT = ("pomset asks a trigger whether to fire after each element, so a window's panes "
               "are the same however the input is bundled, on every runner; Beam Python's "
               "batch trigger driver adds a whole bundle's elements to the window before asking")
ON_TIME = ("when the watermark passes the end of a window pomset emits its ON_TIME pane, even "
           "an empty one (Beam Java's default, OnTimeBehavior.FIRE_ALWAYS), and what the "
           "trigger left pending; Beam Python's trigger driver fires at the end of the window "
           "only for AfterWatermark and drops what is pending")
#: why Reshuffle's (and a grouping's) reified elements differ from Beam Python's
RESHUFFLE_PANES = ("Beam's runner encodes times in ms (3.999) and marks a grouping's one "
                   "ON_TIME pane not last; pomset keeps µs (the window's end less 1 µs) and "
                   "that pane is the last (tests/test_window_keeping.py::test_reshuffle_keeps_"
                   "microseconds_and_the_only_pane_is_last)")
OLD_RESHUFFLE = ("Beam before 2.64 pickled what Reshuffle moved (a RuntimeError for this "
                 "element); pomset has one Reshuffle at every update_compatibility_version "
                 "(tests/test_window_keeping.py::test_reshuffle_at_an_old_compatibility_"
                 "version_still_takes_unpicklable_elements)")
DIFFERENCES: Dict[str, Dict[str, str]] = {
    "transforms/combiners_test": {
    },
    "transforms/util_test": {
        "IdentityWindowTest.test_no_window_context_fails":
            "every pomset element is in a window (a DoFn's TimestampedValue stays in its "
            "input's), so _IdentityWindowFn always has one to keep (tests/test_window_keeping."
            "py::test_a_dofns_timestamped_output_stays_in_its_window)",
        "ReshuffleTest.test_reshuffle_window_fn_preserved": RESHUFFLE_PANES,
        "ReshuffleTest.test_reshuffle_windows_unchanged": RESHUFFLE_PANES,
        "ReshuffleTest.test_reshuffle_unpicklable_in_global_window": OLD_RESHUFFLE,
        "ReshuffleTest.test_reshuffle_unpicklable_in_non_global_window": OLD_RESHUFFLE,
    },
    "transforms/ptransform_test": {
        "TestGroupBy.test_aggregate":
            "an aggregating GroupBy gives Rows (what sinks and the columnar runners read), "
            "Beam named tuples (tests/test_group_by_keys.py::test_an_aggregations_output_is_a_"
            "row_of_the_keys_and_aggregates)",
        "TestGroupBy.test_pickled_field":
            "keys group by == and hash, not by their encoded bytes, so two objects without "
            "__eq__ are two keys (tests/test_group_by_keys.py::test_keys_group_by_equality_"
            "not_by_their_encoding)",
        "PTransformLabelsTest.test_default_labels":
            "a lambda's default label is Map(<lambda>), without Beam's file and line, so a step's "
            "label (a checkpoint's key) stays when code above it moves "
            "(tests/test_pipeline_surface.py::test_a_repeated_label_is_made_unique)",
    },
    "transforms/core_test": {
        "FlattenTest.test_flatten_mismatched_windows":
            "Flatten of differently windowed inputs is a construction error, as in Beam Java (Beam "
            "Python warns and takes the first's windowing) (test_errors.py::TestConstruction::"
            "test_flatten_of_differently_windowed_inputs)",
        "FlatMapTest.test_default":
            "a FlatMap fn returning a str is an error, not its characters (test_pipeline_surface.",
    },
    "transforms/window_test": {
        "WindowTest.test_custom_windows": (
            "TestCustomWindows assigns time t >= 5 to [5, t), which does not hold t; pomset "
            "rejects a window that does not hold its element's time, at construction (the "
            "watermark could pass it before its elements) "
            "(tests/test_windowfn_protocol.py::test_a_window_that_does_not_hold_its_elements_"
            "time_is_an_error)"),
    },
    "transforms/trigger_test": {
        "TriggerPipelineTest.test_after_count": (
            f"FixedWindows(10), AfterCount(3), discarding, batch. {PER_ELEMENT}: Beam's one "
            "pane for A in [0, 10) holds 1..5 ('A-5'), pomset's the first three, after which "
            "AfterCount(3) has finished, the window is closed and 4 and 5 are dropped, counted "
            "and warned of. And " + ON_TIME + ": A's [10, 20) holds 2 elements, never enough "
            "to fire, so Beam drops them and pomset emits 'A-2' "
            "(tests/test_beam_transforms.py::test_after_count_on_pomset)"),
        "TriggerPipelineTest.test_always": (
            f"FixedWindows(10), Always(), discarding, batch. {PER_ELEMENT}: Beam fires a pane "
            "per window holding the bundle ('A-6', A,1 twice), pomset a pane per element "
            "('A-1'). And " + ON_TIME + ": each window ends with an empty ON_TIME pane "
            "('A-0') (tests/test_beam_transforms.py::test_always_on_pomset)"),
        "TriggerPipelineTest.test_repeatedly_after_processing_time": (
            "FixedWindows(10), Repeatedly(AfterProcessingTime(2)), discarding, TestStream. "
            + ON_TIME + ": after the processing-time panes [0, 1], [2, 3], [4, 5], [6] the "
            "window's end gives pomset one more, empty, pane [] "
            "(tests/test_beam_transforms.py::test_repeatedly_after_processing_time_on_pomset)"),
    },
    "transforms/sideinputs_test": {
    },
    "transforms/create_test": {
    },
    "transforms/stats_test": {
    },
    "transforms/deduplicate_test": {
    },
    "transforms/userstate_test": {
    },
    "transforms/combinefn_lifecycle_test": {
    },
    "testing/util_test": {
        "UtilTest.test_equal_to_per_window_fail_unexpected_element":
            MIN_WINDOW,
        "UtilTest.test_equal_to_per_window_fail_unmatched_element":
            MIN_WINDOW,
        "UtilTest.test_equal_to_per_window_passes":
            MIN_WINDOW,
        "UtilTest.test_equal_to_per_window_succeeds_no_reify_windows":
            MIN_WINDOW,
    },
    "testing/test_stream_test": {
        "TestStreamTest.test_multiple_outputs_with_watermark_advancement": (
            f"FixedWindows(15), AfterWatermark(early=AfterCount(1)), discarding. {PER_ELEMENT}: "
            "Beam's early pane holds a, b, c (one bundle), pomset's three panes one each; "
            "both then the empty ON_TIME pane (tests/test_test_stream_outputs.py::"
            "test_early_panes_of_tagged_outputs_on_pomset)"),
    },
    "pvalue_test": {
        "RowTest.test_row_comparison_respects_element_order":
            "a Row is a dict of fields: their order does not matter (tests/test_pipeline_surface.",
    },
    "pipeline_test": {
        "PipelineTest.test_reuse_custom_transform_instance":
            "a repeated label is made unique, not an error (tests/test_pipeline_surface.py)",
        "PipelineOptionsTest.test_flag_parsing":
            "an explicit flag pomset does not know is an error (tests/test_pipeline_surface.py)",
        "PipelineOptionsTest.test_keyword_parsing":
            "an explicit flag pomset does not know is an error (tests/test_pipeline_surface.py)",
        "PipelineOptionsTest.test_view_as":
            "an explicit flag pomset does not know is an error (tests/test_pipeline_surface.py)",
    },
}

#: tests that patch Beam's coders._should_force_use_dill (pomset pickles without dill)
NO_DILL = "patches Beam's coders._should_force_use_dill: pomset has no dill to force"
GAPS: Dict[str, Dict[str, str]] = {
    "transforms/combiners_test": {
        "CombineTest.test_combining_with_sliding_windows_and_fanout":
            "AssertionError: ToList's order after the fanout's parts merge is not the input's",
    },
    "transforms/util_test": {
        "GroupByEncryptedKeyTest.test_gbek_gcp_secret_manager_roundtrips": "skips itself: GCP dep",
        "GroupByEncryptedKeyTest.test_gbek_gcp_secret_manager_throws": "skips itself: GCP depende",
        "GroupByEncryptedKeyTest.test_gbk_actually_does_encryption":
            "no --gbek option (every GroupByKey encrypted) nor utils.secret.GcpSecret",
        "GroupByEncryptedKeyTest.test_gbk_with_gbek_option_fake_secret_manager_roundtrips":
            "skips itself: GCP dependencies are not installed",
        "BatchElementsTest.test_stateful_grows_to_max_batch":
            "BatchElements across bundles (max_batch_duration_secs) batches by max size, not "
            "by the estimator's growing sizes",
        "ReshuffleTest.test_reshuffle_custom_window_preserves_metadata_0": NO_DILL,
        "ReshuffleTest.test_reshuffle_custom_window_preserves_metadata_1": NO_DILL,
        "ReshuffleTest.test_reshuffle_default_window_preserves_metadata_0": NO_DILL,
        "ReshuffleTest.test_reshuffle_default_window_preserves_metadata_1": NO_DILL,
        "GroupIntoBatchesTest.test_in_global_window_with_synthetic_source": "AttributeError: poms",
        "GroupIntoBatchesTest.test_output_typehints": "NotImplementedError: Beam's apache_beam.ty",
    },
    "transforms/ptransform_test": {
        "PTransformTest.test_callable_non_serializable_error_message":
            "a Map's function is not pickled when the Map is made: RuntimeError not raised",
        "PTransformTest.test_group_by_key_fake_deterministic_coder":
            "AttributeError: 'CoderRegistry' object has no attribute 'register_fallback_coder'",
        "PTransformTest.test_group_by_key_importable_special_types_0":
            "NotImplementedError: Beam's apache_beam.coders.coders_test_common: pomset has none",
        "PTransformTest.test_group_by_key_importable_special_types_1":
            "skips itself: could not import 'dill': No module named 'dill'",
        "PTransformTest.test_group_by_key_non_deterministic_coder":
            "no determinism check of a grouping's key coder: Exception not raised",
        "PTransformTest.test_group_by_key_trigger": "OptionsError: unknown runner 'BundleBasedDir",
        "PTransformTest.test_group_by_key_unbounded_global_default_trigger":
            "pomset's TestStream gives a bounded PCollection (it ends): ValueError not raised",
        "PTransformTest.test_read_metrics": "NotImplementedError: Beam's apache_beam.io.utils.Cou",
        "PTransformTest.test_resource_hint_application_is_additive":
            "NotImplementedError: Beam's apache_beam.portability.common_urns: pomset has none",
        "SelectTest.test_type_inference":
            "a Select's element_type is Row, not a row type with _fields (name, type) inferred "
            "from the lambdas",
        "PTransformTypeCheckTestCase.test_combine_insufficient_type_hint_information":
            "ALL_REQUIRED names CombineGlobally's inner KeyByNone, Beam's its CombinePerKey",
        "PTransformTypeCheckTestCase.test_combine_runtime_type_check_violation_using_decorators":
            "a combine's output is not checked at run time (Beam: 'Mul/CombinePerKey: ...')",
        "PTransformTypeCheckTestCase.test_combine_runtime_type_check_violation_using_methods":
            "the run-time check names Beam's inner step ParDo(SortJoin/KeyWithVoid)",
        "PTransformTypeCheckTestCase.test_mean_per_key_pipeline_checking_violated":
            "Mean.PerKey is one CombinePerKey labelled by the user, Beam's names CombinePerKey(M",
        "DeadLettersTest_1.test_partial":
            "skips itself: Subprocess and partial mutally exclusive.",
        "PTransformTypeAliasTest.test_type_alias_statement_supported_in_with_output_types":
            "skips itself: Python 3.12 required",
        "PTransformTypeAliasTest.test_type_alias_supported_in_ptransform_with_output_types":
            "skips itself: Python 3.12 required",
    },
    "transforms/core_test": {
    },
    "transforms/window_test": {
    },
    "transforms/trigger_test": {
        "BatchTranscriptTest.test_discarding_early_fixed": BATCH_DISCARDING,
        "BatchTranscriptTest.test_early_late_sessions": BATCH_LATE,
        "BatchTranscriptTest.test_fixed_default_late_data": BATCH_LATE,
        "BatchTranscriptTest.test_fixed_drop_late_data_after_allowed_lateness":
            BATCH_LATE,
        "BatchTranscriptTest.test_garbage_collection": BATCH_DISCARDING,
        "BatchTranscriptTest.test_known_late_data_no_watermark_hold_possible":
            BATCH_LATE,
        "BatchTranscriptTest.test_known_late_data_watermark": BATCH_LATE,
        "BatchTranscriptTest.test_timestamp_combiner_custom_timestamping_earliest_1":
            BATCH_TRANSFORMED,
    },
    "transforms/sideinputs_test": {
        "SideInputsTest.test_default_window_mapping_fn_source_window":
            "AttributeError: pomset.window has no 'NonMergingWindowFn': pomset does not support B",
        "SideInputsTest.test_side_input_with_sdf": "NotImplementedError: Beam's apache_beam.testi",
    },
    "transforms/create_test": {
        "CreateTest.test_create_uses_coder_for_pickling": "NotImplementedError: Beam's apache_bea",
    },
    "transforms/stats_test": {
        "ApproximateUniqueTest_0.test_approximate_unique_combine_fn_requires_compatible_coder":
            "NotImplementedError: Beam's apache_beam.coders.coders: pomset has no equivalent",
        "ApproximateUniqueTest_0.test_approximate_unique_combine_fn_requires_nondeterministic_coder":
            "NotImplementedError: Beam's apache_beam.coders.coders: pomset has no equivalent",
    },
    "transforms/deduplicate_test": {
        "DeduplicateTest.test_deduplication_with_event_time": "skips itself: TestStream not yet s",
        "DeduplicateTest.test_deduplication_with_processing_time": "skips itself: TestStream not ",
    },
    "transforms/userstate_test": {
    },
    "transforms/combinefn_lifecycle_test": {
    },
    "testing/util_test": {
    },
    "testing/test_stream_test": {
        "ReverseTestStreamTest.test_basic_execution":
            "no ReverseTestStream (records a stream's elements, watermarks and processing time)",
        "ReverseTestStreamTest.test_windowing":
            "no ReverseTestStream (records a stream's elements, watermarks and processing time)",
    },
    "pvalue_test": {
    },
    "pipeline_test": {
        "PipelineTest.test_memory_usage": "Fails on some platforms with new urllib3.",
        "PipelineTest.test_track_pcoll_unbounded": "NotImplementedError: Beam's apache_beam.io.io",
        "PipelineTest.test_track_pcoll_unbounded_flatten": "NotImplementedError: Beam's apache_be",
        "DoFnTest.test_context_params": "AttributeError: type object 'DoFn' has no attribute 'Bun",
    },
}

#: tests also run on Spark batch (those whose pipeline takes the test pipeline's options)
ON_SPARK: Dict[str, Set[str]] = {
    "transforms/util_test": {
        "CoGroupByKeyTest.test_co_group_by_key_on_tuple",
        "CoGroupByKeyTest.test_co_group_by_key_on_list",
        "CoGroupByKeyTest.test_co_group_by_key_on_iterable",
        "CoGroupByKeyTest.test_co_group_by_key_on_dict",
        "CoGroupByKeyTest.test_co_group_by_key_on_dict_with_tuple_keys",
    },
    "transforms/window_test": {
        "WindowTest.test_sliding_windows",
        "WindowTest.test_sliding_windows_period_longer_than_size", "WindowTest.test_sessions",
        "WindowTest.test_timestamped_value", "WindowTest.test_rewindow",
        "WindowTest.test_rewindow_regroup", "WindowTest.test_timestamped_with_combiners",
        "WindowTest.test_window_assignment_idempotency",
        "WindowTest.test_window_assignment_through_multiple_gbk_idempotency",
    },
    "transforms/trigger_test": {"TriggerPipelineTest.test_never"},
    "transforms/combinefn_lifecycle_test": {
        "CombineFnLifecycleTest.test_combine", "CombineFnLifecycleTest.test_non_liftable_combine",
        "CombineFnLifecycleTest.test_combining_value_state",
    },
    "transforms/ptransform_test": {
        "DeadLettersTest_0.test_error_messages", "DeadLettersTest_0.test_partial",
        "DeadLettersTest_1.test_tuples",
    },
    "transforms/userstate_test": {
        "StatefulDoFnOnDirectRunnerTest.test_stateful_set_state_portably",
        "StatefulDoFnOnDirectRunnerTest.test_dynamic_timer_clear_then_set_timer",
    },
}

#: the stateful DoFn tests run on every mode of the local runner (most record what they see
#: into a list of the test class, which the steps after a stateful one do in the test's
#: process), and those on Spark on Spark streaming too (runner names as conftest.runner_flags)
_LOCAL_MODES = ("local-sequential", "local-threads", "local-processes")
_USERSTATE = [
    "simple_stateful_dofn", "clearing_bag_state", "two_timers_one_function",
    "simple_read_modify_write_stateful_dofn", "clearing_read_modify_write_state",
    "simple_set_stateful_dofn", "clearing_set_state", "stateful_set_state_portably",
    "stateful_set_state_clean_portably", "stateful_dofn_nonkeyed_input",
    "generate_sequence_with_realtime_timer", "simple_stateful_dofn_combining",
    "timer_output_timestamp", "timer_output_timestamp_and_window", "timer_default_tag",
    "dynamic_timer_simple_dofn", "dynamic_timer_clear_then_set_timer",
    "dynamic_timer_clear_timer", "dynamic_timer_multiple", "dynamic_timer_and_simple_timer",
    "index_assignment", "hash_join",
]
ON_RUNNERS: Dict[str, Dict[str, Tuple[str, ...]]] = {
    "transforms/userstate_test": {
        f"StatefulDoFnOnDirectRunnerTest.test_{t}": _LOCAL_MODES + (
            ("spark-streaming",) if t in ("stateful_set_state_portably",
                                          "dynamic_timer_clear_then_set_timer") else ())
        for t in _USERSTATE},
}
