"""Beam's warnings, as a ParDo is made, about what a DoFn's process returns
(pomset/sdk/process_returns.py)."""
from __future__ import annotations

import logging

import pomset as pm


class MixesYieldAndReturn(pm.DoFn):
    def process(self, element):
        if element < 0:
            return -1
        yield element


class ReturnsNone(pm.DoFn):
    def process(self, element):
        return None


class FiltersWithBareReturn(pm.DoFn):
    def process(self, element):
        if element == 0:
            return
        return [element]


class GeneratorWithBareReturn(pm.DoFn):
    def process(self, element):
        if not element:
            return
        yield element

        def inner():
            return 3
        inner()


def test_a_generator_returning_a_value_is_warned_of(caplog):
    with caplog.at_level(logging.WARNING):
        pm.ParDo(MixesYieldAndReturn())
    assert "Using yield and return" in caplog.text
    assert "MixesYieldAndReturn" in caplog.text


def test_a_process_returning_only_none_is_warned_of(caplog):
    with caplog.at_level(logging.WARNING):
        pm.ParDo(ReturnsNone())
    assert "Process method returned None" in caplog.text and "ReturnsNone" in caplog.text


def test_bare_returns_beside_values_and_nested_functions_are_not(caplog):
    with caplog.at_level(logging.WARNING):
        pm.ParDo(FiltersWithBareReturn())
        pm.ParDo(GeneratorWithBareReturn())
    assert caplog.text == ""


def test_the_warned_dofns_still_run():
    p = pm.Pipeline(runner="local")
    out = p | pm.Create([1, -2]) | pm.ParDo(MixesYieldAndReturn())
    assert sorted(wv.value for wv in p.run().collect(out)) == [1]
