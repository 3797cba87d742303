"""The performance docs are a reference the benchmarks write: every table in BENCHMARKS.md and
docs/performance.md sits between markers that a benchmark writes, beside the command that
reproduces it; `make bench` reruns every benchmark the user's page shows; the plots draw
from their data; and no page narrates when or in which sitting something was measured."""
import glob
import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import results  # noqa: E402
import run_all  # noqa: E402

DOCS = ["BENCHMARKS.md", os.path.join("docs", "performance.md")]
MARKER = re.compile(r"<!-- ([a-z0-9-]+):(begin|end) -->")
#: the words of a diary: "the fifth session", or a date followed by what was run or measured
DIARY = re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh"
                   r"|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth"
                   r"|nineteenth|twentieth|last|previous) session\b"
                   r"|20[0-9]{2}-[01][0-9]-[0-3][0-9].{0,40}(run|block|measured)", re.I)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def sources():
    """Each benchmark script's name and source."""
    return {os.path.basename(p)[:-3]: open(p, encoding="utf-8").read()
            for p in glob.glob(os.path.join(ROOT, "benchmarks", "*.py"))}


def blocks(text, doc):
    """(name, line of its begin marker) of each marked block; fails on a marker without its
    pair or a block inside another."""
    found, open_ = [], None
    for no, line in enumerate(text.splitlines(), 1):
        m = MARKER.fullmatch(line.strip())
        if not m:
            continue
        name, kind = m.groups()
        if kind == "begin":
            assert open_ is None, f"{doc}:{no}: {name} begins inside {open_[0]}"
            open_ = (name, no)
        else:
            assert open_ and open_[0] == name, f"{doc}:{no}: {name} ends without its begin"
            found.append(open_)
            open_ = None
    assert open_ is None, f"{doc}:{open_[1]}: {open_[0]} has no end marker"
    return found


def writers(name, scripts):
    """The benchmarks whose source names the block `name`."""
    begin = results.markers(name)[0]
    return [s for s, src in scripts.items() if begin in src or f'"{name}"' in src]


@pytest.mark.parametrize("doc", DOCS)
def test_every_table_sits_between_the_markers_a_benchmark_writes(doc):
    text, scripts = read(doc), sources()
    inside = set()
    for name, begin in blocks(text, doc):
        assert writers(name, scripts), f"{doc}:{begin}: no benchmark writes the block {name}"
        end = text.splitlines().index(results.markers(name)[1], begin - 1) + 1
        inside.update(range(begin, end + 1))
    loose = [no for no, line in enumerate(text.splitlines(), 1)
             if line.startswith("|") and no not in inside]
    assert not loose, f"{doc}: tables outside any benchmark's markers at lines {loose}"
    assert blocks(text, doc), f"{doc}: no tables at all"


@pytest.mark.parametrize("doc", DOCS)
def test_every_table_follows_the_command_that_reproduces_it(doc):
    text, scripts = read(doc), sources()
    lines = text.splitlines()
    for name, begin in blocks(text, doc):
        heading = max(i for i in range(begin) if i == 0 or lines[i - 1].startswith("#"))
        before = "\n".join(lines[heading:begin])
        commands = [f"benchmarks/{s}.py" for s in writers(name, scripts)] + ["make bench"]
        assert any(c in before for c in commands), (
            f"{doc}:{begin}: the block {name} has none of {commands} between its heading "
            "and its table")


def test_make_bench_reruns_every_table_and_plot_of_the_performance_page():
    text, scripts = read(DOCS[1]), sources()
    chosen = {b.name for b in run_all.SET}
    for name, begin in blocks(text, DOCS[1]):
        assert set(writers(name, scripts)) & chosen, (
            f"docs/performance.md:{begin}: {name} is written by {writers(name, scripts)}, "
            "which `make bench` does not run")
    for image in re.findall(r"\]\(img/([a-z_]+)\.png\)", text):
        assert any(f'write_plot("{image}"' in scripts[b] for b in chosen), (
            f"docs/performance.md: img/{image}.png is drawn by no benchmark `make bench` runs")
    assert "make bench" in text and "make bench-quick" in text and "make bench" in read("README.md")


def test_each_benchmark_in_the_set_takes_the_flags_run_all_gives_it():
    scripts = sources()
    for b in run_all.SET:
        for quick in (False, True):
            for flag in run_all.command(b, quick, write=False)[2:]:
                if flag.startswith("--"):
                    negated = f'"--{flag[5:]}", action=argparse.BooleanOptionalAction'
                    assert f'"{flag}"' in scripts[b.name] or (
                        flag.startswith("--no-") and negated in scripts[b.name]), \
                        f"{b.name}.py has no flag {flag}"


def test_benchmarks_md_is_a_reference_under_600_lines():
    assert len(read("BENCHMARKS.md").splitlines()) < 600


def test_no_page_narrates_when_or_in_which_sitting_it_was_measured():
    paths = ["README.md", "BENCHMARKS.md"] + [
        os.path.relpath(p, ROOT) for top in ("docs", "pomset")
        for p in glob.glob(os.path.join(ROOT, top, "**", "*"), recursive=True)
        if p.endswith((".md", ".py", ".json", ".yml"))]
    diary = []
    for path in paths:
        for no, line in enumerate(read(path).splitlines(), 1):
            if DIARY.search(line):
                diary.append(f"{path}:{no}: {line.strip()[:100]}")
    assert not diary, "\n".join(diary)
    assert not re.search(r"20[0-9]{2}-[01][0-9]-[0-3][0-9]", read(DOCS[1])), \
        "docs/performance.md gives a date"


def test_a_block_is_written_between_its_markers_in_every_doc_that_has_them(tmp_path):
    one, two, none = tmp_path / "one.md", tmp_path / "two.md", tmp_path / "none.md"
    begin, end = results.markers("t")
    one.write_text(f"head\n{begin}\nold\n{end}\ntail\n")
    two.write_text(f"{begin}{end}\n")
    none.write_text("nothing here\n")
    written = results.write_block(begin, end, "| a |\n|---|", docs=[str(one), str(two), str(none)])
    assert written == [str(one), str(two)]
    assert one.read_text() == f"head\n{begin}\n| a |\n|---|\n{end}\ntail\n"
    assert two.read_text() == f"{begin}\n| a |\n|---|\n{end}\n"
    with pytest.raises(ValueError, match="<!-- t:begin -->"):
        results.write_block(begin, end, "x", docs=[str(none)])


@pytest.mark.parametrize("name", sorted(os.path.basename(p)[:-5] for p in
                                        glob.glob(os.path.join(ROOT, "docs", "img", "*.json"))))
def test_each_plot_draws_from_its_data(name, tmp_path, monkeypatch):
    figure = json.loads(read(os.path.join("docs", "img", name + ".json")))
    assert os.path.exists(os.path.join(ROOT, "docs", "img", name + ".png"))
    monkeypatch.setattr(results, "IMG", str(tmp_path))
    with open(results.write_plot(name, figure), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
