"""CombineFns the tests share."""
import pomset as pm


class NoRetract(pm.CombineFn):
    """A sum that cannot retract (no retract_input)."""

    def create_accumulator(self):
        return 0

    def add_input(self, acc, v):
        return acc + v

    def merge_accumulators(self, accs):
        return sum(accs)


class VectorSum(NoRetract):
    """A sum whose `add_inputs` takes a group's values at once (`VectorAggregator`)."""

    def add_inputs(self, acc, values):
        return acc + int(sum(values))
