"""A Map's, FlatMap's or Filter's function is checked for what it captures when the
transform is made: an unpicklable capture is Beam's RuntimeError there, not a failure on a
worker; functions, classes and modules it holds pass, as the runners ship them."""
import threading

import pytest

import pomset as beam

LOCK = threading.Lock()


def test_an_unpicklable_capture_fails_as_the_transform_is_made():
    lock = threading.Lock()
    with pytest.raises(RuntimeError, match=r"Unable to pickle fn .*User code must be "
                                           r"serializable \(picklable\)"):
        beam.Map(lambda x: (x, lock))
    with pytest.raises(RuntimeError, match="Unable to pickle fn"):
        beam.Filter(lambda x: LOCK.locked())


def test_functions_classes_and_plain_values_pass():
    class Local:
        pass

    def helper(x):
        return x

    table = {1: "one"}
    beam.Map(lambda x: (helper(x), Local, table.get(x), threading))
    beam.FlatMap(lambda x, n=[1, 2]: n)
    beam.Map(len)
