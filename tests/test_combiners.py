"""pomset's answers for Beam's combiners and stats (issue 60) where Beam's own tests leave
them open: the approximate estimates against exact counts, fanout and extra arguments giving
the plain combine's result, samples drawn from the input."""
from __future__ import annotations

import random

import pytest

import pomset as pm
from pomset import combiners
from pomset.testing.util import assert_that, equal_to
from pomset.transforms.stats import ApproximateQuantilesCombineFn


def test_approximate_unique_is_exact_below_its_sample_size_and_close_above():
    values = [random.randrange(10_000) for _ in range(5000)]
    with pm.Pipeline() as p:
        pc = p | pm.Create(values)
        small = p | "small" >> pm.Create(list(range(20)) * 3)
        assert_that(small | "exact" >> pm.ApproximateUnique.Globally(size=64), equal_to([20]),
                    label="exact")
        near = pc | pm.ApproximateUnique.Globally(error=0.05)
        actual = len(set(values))
        assert_that(near | pm.Map(lambda n: abs(n - actual) / actual <= 0.05),
                    equal_to([True]), label="near")


def test_approximate_unique_rejects_sizes_and_errors_out_of_range():
    with pytest.raises(ValueError, match="size >= 16"):
        pm.ApproximateUnique.Globally(size=15)
    with pytest.raises(ValueError, match="between 0.01 and 0.50"):
        pm.ApproximateUnique.PerKey(error=0.6)
    with pytest.raises(ValueError, match="not both"):
        pm.ApproximateUnique.Globally(size=20, error=0.1)


def test_approximate_quantiles_stay_within_epsilon_after_collapsing():
    fn = ApproximateQuantilesCombineFn.create(5, epsilon=0.01, max_num_elements=10_000)
    data = list(range(10_000))
    random.shuffle(data)
    accs = []
    for i in range(0, len(data), 500):
        acc = fn.create_accumulator()
        for v in data[i:i + 500]:
            acc = fn.add_input(acc, v)
        accs.append(acc)
    quantiles = fn.extract_output(fn.merge_accumulators(accs))
    assert quantiles[0] == 0 and quantiles[-1] == 9999
    for q, exact in zip(quantiles[1:-1], (2500, 5000, 7500)):
        assert abs(q - exact) <= 100


def test_fanout_gives_the_plain_combines_result():
    pairs = [(k, v) for k in "abc" for v in range(50)]
    with pm.Pipeline() as p:
        pc = p | pm.Create(pairs)
        assert_that(pc | pm.CombinePerKey(sum).with_hot_key_fanout(4),
                    equal_to([(k, sum(range(50))) for k in "abc"]), label="per key")
        assert_that(pc | pm.Values() | pm.CombineGlobally(sum).with_fanout(3),
                    equal_to([3 * sum(range(50))]), label="globally")


def test_combine_per_key_passes_extra_arguments_and_side_inputs():
    def capped_sum(values, cap, floor=0):
        return max(floor, min(cap, sum(values)))
    with pm.Pipeline() as p:
        cap = pm.pvalue.AsSingleton(p | "cap" >> pm.Create([10]))
        pc = p | pm.Create([("a", 4), ("a", 9), ("b", 1)])
        assert_that(pc | pm.CombinePerKey(capped_sum, cap, floor=3),
                    equal_to([("a", 10), ("b", 3)]))


def test_samples_are_drawn_from_the_input_at_most_n():
    with pm.Pipeline() as p:
        pc = p | pm.Create(list(range(100)))
        sampled = pc | combiners.Sample.FixedSizeGlobally(10)
        assert_that(sampled | pm.Map(lambda s: len(s) == 10 and len(set(s)) == 10
                                     and all(0 <= v < 100 for v in s)),
                    equal_to([True]))


def test_tuple_combine_fn_combines_each_component():
    fn = combiners.TupleCombineFn(min, combiners.MeanCombineFn(), max)
    acc = fn.create_accumulator()
    for row in [(3, 1, "a"), (1, 3, "c")]:
        acc = fn.add_input(acc, row)
    merged = fn.merge_accumulators([acc, fn.create_accumulator()])
    assert fn.extract_output(merged) == (1, 2.0, "c")
