"""How much of Beam's own unit-test suite passes on pomset (issue 60): each module in
beam_src.SUITE loaded as tests/beam_compat.py loads it (the import changed, nothing else),
every unittest test method in it run on the local runner, one module per subprocess. Prints
a table of passed/total per module (tests/beam_suite.py's deselected Beam internals not
counted) and, with --failures, each failing test's first error
line (what blocks it).

    python tests/beam_coverage.py [--failures] [--json FILE] [MODULE ...]"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import traceback
import unittest
from typing import Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import beam_src  # noqa: E402
import beam_suite  # noqa: E402

TIMEOUT_S = 60


def run_module(name: str) -> List[Dict[str, str]]:
    """Each test method of Beam's module `name` (as in beam_src.SUITE), run here: a list of
    {test, outcome (pass, fail, error, skip), message}."""
    import beam_compat
    from pomset.testing.test_pipeline import TestPipeline
    TestPipeline.pytest_test_pipeline_options = "--runner=local"
    try:
        module = beam_compat.load_suite_module(name)
    except BaseException as e:   # the module does not load: every test blocked
        return [{"test": "<load>", "outcome": "error",
                 "message": f"{type(e).__name__}: {e}".splitlines()[0][:300]}]
    rows = []
    for cls_name, method in beam_compat.beam_test_methods(module):
        result = unittest.TestResult()

        def alarm(*_):
            raise TimeoutError(f"over {TIMEOUT_S} s")
        signal.signal(signal.SIGALRM, alarm)
        signal.alarm(TIMEOUT_S)
        try:
            getattr(module, cls_name)(method).run(result)
        except BaseException as e:
            result.errors.append((None, "".join(traceback.format_exception(e))))
        finally:
            signal.alarm(0)
        outcome, message = "pass", ""
        for kind, items in (("error", result.errors), ("fail", result.failures),
                            ("skip", result.skipped)):
            if items:
                outcome, text = kind, items[0][1]
                lines = [line for line in text.strip().splitlines() if line.strip()]
                message = lines[-1][:300] if lines else ""
                break
        if result.expectedFailures:
            outcome = "xfail"
        rows.append({"test": f"{cls_name}.{method}", "outcome": outcome, "message": message})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=list(beam_src.SUITE))
    parser.add_argument("--failures", action="store_true")
    parser.add_argument("--json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        json.dump(run_module(args.one), sys.stdout)
        return
    beam_src.fetch()
    results: Dict[str, List[Dict[str, str]]] = {}
    for name in args.modules:
        proc = subprocess.run([sys.executable, __file__, "--one", name], capture_output=True,
                              text=True)
        try:
            results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            results[name] = [{"test": "<run>", "outcome": "error", "message": tail}]
    total = passed = deselected = 0
    for name, rows in results.items():
        skip = beam_suite.DESELECTED.get(name, {})
        counted = [r for r in rows if r["test"] not in skip]
        ok = sum(r["outcome"] == "pass" for r in counted)
        total, passed, deselected = total + len(counted), passed + ok, deselected + len(skip)
        print(f"{name:42s} {ok:4d}/{len(counted):4d}   ({len(skip)} deselected)")
        if args.failures:
            for r in counted:
                if r["outcome"] != "pass":
                    print(f"    {r['outcome']:5s} {r['test']}: {r['message']}")
    print(f"{'all':42s} {passed:4d}/{total:4d} ({100 * passed / max(total, 1):.0f}%)   "
          f"({deselected} deselected, {100 * deselected / max(total + deselected, 1):.0f}%)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
