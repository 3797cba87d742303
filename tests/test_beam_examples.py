"""Beam's own examples run on pomset unmodified but for the import (issue 17): the word count
and the mobile gaming examples (user score, hourly team score, leader board with early and
late firings, game stats with sessions), from the pinned apache-beam wheel, with
`import apache_beam as beam` read as `import pomset as beam` (tests/beam_compat.py).

Every test method of their Beam test modules runs, one pytest test each, on the local runner
and on Spark (the tests whose pipelines take the test pipeline options; Beam's TestPipeline
gets `--runner` and `--temp_location` there as Beam's integration tests get them):
wordcount_test.test_basics (runs `wordcount.run(...)`, which writes files, and reads them
back), user_score_test.test_user_score, hourly_team_score_test.test_hourly_team_score,
leader_board_test.test_leader_board_teams and .test_leader_board_users,
game_stats_test.test_spammy_users and .test_game_stats_sessions.

One differs on purpose, marked as an expected failure, with a test of pomset's answer:
leader_board_test.test_leader_board_users (see USERS_DIFFER)."""
from __future__ import annotations

import glob

import pytest

import beam_compat
from pomset.testing.test_pipeline import TestPipeline
from pomset.testing.util import equal_to

GAME = "apache_beam.examples.complete.game."
EXAMPLES = ["apache_beam.examples.wordcount"] + [
    GAME + name for name in ("user_score", "hourly_team_score", "leader_board", "game_stats")]
TESTS = [name + "_test" for name in EXAMPLES]

#: (test module, TestCase class, method), every one of the examples' tests
CASES = [
    ("wordcount_test", "WordCountTest", "test_basics"),
    ("user_score_test", "UserScoreTest", "test_user_score"),
    ("hourly_team_score_test", "HourlyTeamScoreTest", "test_hourly_team_score"),
    ("leader_board_test", "LeaderBoardTest", "test_leader_board_teams"),
    ("leader_board_test", "LeaderBoardTest", "test_leader_board_users"),
    ("game_stats_test", "GameStatsTest", "test_spammy_users"),
    ("game_stats_test", "GameStatsTest", "test_game_stats_sessions"),
]
#: the tests that build their pipeline's options themselves, so run where those say (local)
OWN_OPTIONS = {"test_leader_board_users"}

USERS_DIFFER = (
    "Beam Python gives [] for CalculateUserScores (global window, "
    "Repeatedly(AfterCount(10)), accumulating) over 6 events: the trigger never fires, and "
    "its trigger driver drops the pane the trigger left pending when the global window ends "
    "with the input (why the test needs --allow_unsafe_triggers). pomset never drops data "
    "silently: when the window closes it emits what the trigger left pending, as Beam Java "
    "does, so each user's total arrives (test_leader_board_users_on_pomset)")
DIFFERENCES = {"test_leader_board_users": USERS_DIFFER}


@pytest.fixture(scope="module")
def beam():
    """The examples and their tests, loaded from Beam's sources, by module name."""
    loaded = beam_compat.load(EXAMPLES + TESTS)
    return {name.rsplit(".", 1)[-1]: module for name, module in loaded.items()}


@pytest.fixture
def test_pipeline_options(request, monkeypatch, tmp_path):
    """Give Beam's TestPipeline `--runner` and `--temp_location`, as Beam's integration tests
    are given them (`--test-pipeline-options`)."""
    def use(runner: str) -> None:
        if runner == "spark":
            request.getfixturevalue("spark_session")
        monkeypatch.setattr(TestPipeline, "pytest_test_pipeline_options",
                            f"--runner={runner} --temp_location={tmp_path}")
    return use


@pytest.mark.parametrize("module,cls,method,runner",
                         list(beam_compat.test_params(CASES, OWN_OPTIONS, DIFFERENCES)))
def test_beam_example(beam, test_pipeline_options, module, cls, method, runner):
    test_pipeline_options(runner)
    beam_compat.run_beam_test(beam[module], cls, method)


def test_every_test_of_the_examples_runs_here(beam):
    found = [(name, cls, method) for name in (t.rsplit(".", 1)[-1] for t in TESTS)
             for cls, method in beam_compat.beam_test_methods(beam[name])]
    assert sorted(found) == sorted(CASES)


def test_leader_board_users_on_pomset(beam):
    """pomset's answer to Beam's test_leader_board_users: every user's total, emitted when
    the global window closes at the end of the input (USERS_DIFFER)."""
    got, = beam_compat.outputs_of(beam["leader_board_test"], "LeaderBoardTest",
                                  "test_leader_board_users")
    equal_to([("user1_team1", 50), ("user2_team2", 2), ("user3_team3", 8),
              ("user4_team3", 5)])(got)


def test_what_pomset_lacks_fails_naming_it(beam, tmp_path):
    """The examples' own `run()`s read Google Cloud flags pomset accepts, then fail where
    they reach for what pomset lacks (BigQuery, Pub/Sub), naming it."""
    events = tmp_path / "events.csv"
    events.write_text("user1_team1,team1,18,1447686663000,2015-11-16 15:11:03.921\n")
    flags = ["--dataset=d", "--project=p", "--quiet"]
    with pytest.raises(AttributeError, match=r"Beam's apache_beam\.io\.WriteToBigQuery"):
        beam["hourly_team_score"].run([f"--input={events}", *flags])
    with pytest.raises(AttributeError, match=r"Beam's apache_beam\.io\.ReadFromPubSub"):
        beam["leader_board"].run(["--topic=t", *flags])
    assert not glob.glob(str(tmp_path / "*result*"))
