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
