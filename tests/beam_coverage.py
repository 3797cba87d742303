"""How much of Beam's own unit-test suite passes on pomset (issue 60): each module in
beam_src.SUITE loaded as tests/beam_compat.py loads it (the import changed, nothing else),
every test method in it run on the local runner as tests/test_beam_suite.py runs it, under
pytest, one module per run. Prints a table of passed/total per module (tests/beam_suite.py's
deselected Beam internals not counted) and, with --failures, what blocks each failing test:
its first error line, or, for one beam_suite.py expects to fail, the reason given there.

    python tests/beam_coverage.py [--failures] [--json FILE] [MODULE ...]"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import Dict, List
from xml.etree import ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import beam_src  # noqa: E402
import beam_suite  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITE_TESTS = "tests/test_beam_suite.py"


def run_module(name: str) -> List[Dict[str, str]]:
    """Each test of Beam's module `name` (as in beam_src.SUITE) as tests/test_beam_suite.py
    runs it on the local runner, under pytest (so a test class's pytest fixtures, `caplog`
    and `capsys`, are set up as Beam's own runs do): a list of {test, outcome (pass, fail),
    message: the first error line, or the expected failure's reason}."""
    import test_beam_suite
    ids = [p.id for p in test_beam_suite._params()
           if p.values[0] == name and p.values[2] == "local"]
    if not ids:
        return []
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "junit.xml")
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-o", "addopts=", "-W", "ignore", f"--junitxml={report}",
                        *[f"{SUITE_TESTS}::test_beam_test[{i}]" for i in ids]],
                       cwd=ROOT, capture_output=True, text=True)
        cases = ElementTree.parse(report).getroot().iter("testcase")
        rows = []
        for case in cases:
            test = case.get("name").split(":", 1)[1].rsplit("-", 1)[0]
            outcome, message = "pass", ""
            for child in case:
                text = child.get("message") or (child.text or "")
                lines = [line for line in text.strip().splitlines() if line.strip()]
                first = lines[0][:300] if lines else ""
                if child.tag == "skipped":          # failed, as beam_suite.py expects
                    outcome, message = "fail", first.removeprefix("expected failure: ")
                elif child.tag in ("failure", "error"):
                    if not first.startswith("[XPASS(strict)]"):   # an expected failure passed
                        outcome, message = "fail", first
            rows.append({"test": test, "outcome": outcome, "message": message})
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
