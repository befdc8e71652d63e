"""acrl.offline.d4rl: D4RL's normalised score and the medium target, computed by hand."""

import pytest

from acrl.core.errors import InputError
from acrl.offline.d4rl import medium_target, normalized_score, reference_returns


def test_hopper_scores_against_d4rl_references():
    # d4rl/infos.py: hopper REF_MIN_SCORE -20.272305, REF_MAX_SCORE 3234.3
    # 100 (1500 + 20.272305) / (3234.3 + 20.272305) = 100 * 1520.272305 / 3254.572305
    assert normalized_score(1500.0, "Hopper-v5") == pytest.approx(46.71189214829873, rel=1e-12)
    # the task's references win over measured ones, whatever version
    assert normalized_score(1500.0, "Hopper-v4", random_return=0.0, expert_return=1.0) == pytest.approx(46.711892148)
    assert normalized_score(12135.0, "HalfCheetah-v5") == pytest.approx(100.0)
    assert normalized_score(-280.178953, "HalfCheetah-v5") == pytest.approx(0.0)
    assert normalized_score(1.629008, "Walker2d-v5") == pytest.approx(0.0)
    assert normalized_score(3879.7, "Ant-v5") == pytest.approx(100.0)
    refs = reference_returns("Hopper-v5")
    assert (refs.random, refs.expert) == (-20.272305, 3234.3) and "D4RL" in refs.source


def test_other_tasks_score_against_the_returns_measured_here():
    # 100 (-700 + 1200) / (-200 + 1200) = 50
    assert normalized_score(-700.0, "Pendulum-v1", random_return=-1200.0, expert_return=-200.0) == pytest.approx(50.0)
    refs = reference_returns("acrl/AntDirectional-v5", random_return=-3.0, expert_return=5.0)  # not D4RL's Ant
    assert (refs.random, refs.expert) == (-3.0, 5.0) and "measured here" in refs.source
    with pytest.raises(InputError, match="Pendulum-v1 is not one of D4RL's tasks .*random_return, expert_return"):
        normalized_score(-700.0, "Pendulum-v1", random_return=-1200.0)
    with pytest.raises(InputError, match="no scale"):
        normalized_score(1.0, "Pendulum-v1", random_return=-5.0, expert_return=-5.0)


def test_the_medium_target_is_a_third_of_the_way_from_random_to_expert():
    # hopper with D4RL's references: -20.272305 + (3234.3 + 20.272305) / 3 = 1064.58513
    target, why = medium_target("Hopper-v5", random_return=-5.0)
    assert target == pytest.approx(1064.58513) and "D4RL's references" in why
    # a given expert return with the random return measured here: -1200 + (-150 + 1200) / 3 = -850
    assert medium_target("Pendulum-v1", -1200.0, expert_return=-150.0)[0] == pytest.approx(-850.0)
    assert medium_target("Hopper-v5", -5.0, expert_return=995.0)[0] == pytest.approx(995.0 / 3 - 5.0 * 2 / 3)
    assert medium_target("Pendulum-v1", -1200.0, measured_expert_return=-300.0)[0] == pytest.approx(-900.0)
    assert medium_target("Hopper-v5", -5.0, target_return=700.0) == (700.0, "--target-return")
    with pytest.raises(InputError, match="--target-return R, or --expert-return R"):
        medium_target("Pendulum-v1", -1200.0)
