"""Figures of runs: the learning curve (training episodes faint, their moving average, evaluations as
points with their spread), any metric against steps, episodes or time, labels by what differs, the band
over seeds on a common grid, axes named in words, a colour per configuration and legend entries that
show lines. Checked on matplotlib's artists (the figure `runs_figure` returns), not pixels."""

import numpy as np
import pytest
import yaml
from matplotlib.colors import to_hex

from acrl.core.errors import InputError
from acrl.core.plotting import align_curves, curve_labels, moving_average, plot_runs, plt, runs_figure


def _run(path, seed, rows, step_unit="step", episodes=None, algo="ppo", **settings):
    """A run directory with a config.yaml, a metrics.csv of `rows` (step, eval/return_mean) or of dicts
    (a row each), and with `episodes` [(step, return, length)] an episodes.csv."""
    path.mkdir()
    config = {
        "algo": algo,
        "step_unit": step_unit,
        "config": {
            "env_id": "CartPole-v1",
            "seed": seed,
            "total_steps": 50_000,
            "torch_threads": 1,
            "preset": "default",
            **settings,
        },
    }
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    rows = [row if isinstance(row, dict) else {"step": row[0], "eval/return_mean": row[1]} for row in rows]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    lines = [",".join(columns)] + [",".join(str(row.get(key, "")) for key in columns) for row in rows]
    (path / "metrics.csv").write_text("\n".join(lines) + "\n")
    if episodes is not None:
        text = "".join(f"{step},{i + 1},{ret},{length}\n" for i, (step, ret, length) in enumerate(episodes))
        (path / "episodes.csv").write_text("step,episode,return,length\n" + text)
    return path


@pytest.fixture
def figure():
    """`runs_figure`, its figures closed after the test."""
    made = []

    def draw(*args, **kwargs):
        made.append(runs_figure(*args, **kwargs))
        return made[-1]

    yield draw
    for fig in made:
        plt.close(fig)


def test_labels_name_the_settings_that_differ_within_an_algorithm_and_environment():
    base = {"env_id": "CartPole-v1", "preset": "default", "n_epochs": 10, "clip_range": 0.2}
    labels = curve_labels(
        [
            ("ppo", {**base, "learning_rate": 0.001}),
            ("ppo", {**base, "learning_rate": 0.0003, "clip_range": 0.1}),
            ("ppo", {"env_id": "Acrobot-v1", "learning_rate": 0.001}),
            ("sac", {"env_id": "Pendulum-v1", "preset": None, "hidden_sizes": [64, 64]}),
        ]
    )
    assert labels == [
        "ppo CartPole-v1 [default] clip_range=0.2 learning_rate=0.001",
        "ppo CartPole-v1 [default] clip_range=0.1 learning_rate=0.0003",
        "ppo Acrobot-v1",
        "sac Pendulum-v1",
    ]


def test_the_moving_average_is_the_mean_of_the_last_window_values():
    np.testing.assert_allclose(moving_average(np.array([1.0, 2.0, 3.0, 4.0]), window=2), [1.0, 1.5, 2.5, 3.5])
    np.testing.assert_allclose(moving_average(np.array([3.0, 0.0, 6.0]), window=100), [3.0, 1.5, 3.0])


def test_the_learning_curve_shows_every_training_episode_their_moving_average_and_the_evaluation(tmp_path, figure):
    """Four training episodes and a single evaluation (10 +/- 2 at step 400): the episodes are drawn faint at
    their steps, their moving average solid, the evaluation as a point with its error bar, and the y axis
    reaches down to the first episode's return (1.0), far below the evaluation."""
    run = _run(
        tmp_path / "run",
        3,
        [
            {"step": 200, "rollout/ep_return_mean": 2.0, "time/elapsed_s": 1.0},
            {
                "step": 400,
                "rollout/ep_return_mean": 4.0,
                "time/elapsed_s": 2.0,
                "eval/return_mean": 10.0,
                "eval/return_std": 2.0,
            },
        ],
        episodes=[(200, 1.0, 9), (200, 3.0, 11), (400, 5.0, 13), (400, 7.0, 15)],
        eval_episodes=10,
    )
    ax = figure([run]).axes[0]
    raw, average, evaluation = ax.lines[:3]
    np.testing.assert_array_equal(raw.get_xdata(), [200, 200, 400, 400])
    np.testing.assert_array_equal(raw.get_ydata(), [1.0, 3.0, 5.0, 7.0])
    assert raw.get_alpha() < 1 and raw.get_linestyle() == "None" and average.get_alpha() in (None, 1)
    np.testing.assert_allclose(average.get_ydata(), [1.0, 2.0, 3.0, 4.0])  # the mean so far: fewer than 100
    assert (list(evaluation.get_xdata()), list(evaluation.get_ydata())) == ([400], [10.0])
    (bar,) = [c for c in ax.collections if len(c.get_segments())]  # the error bar from 8 to 12
    np.testing.assert_allclose(bar.get_segments()[0], [[400, 8.0], [400, 12.0]])
    low, high = ax.get_ylim()
    assert low <= 1.0 and high >= 12.0
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "environment steps",
        "return",
        "PPO on CartPole-v1, seed 3",
    )
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "training episode return",
        "training return, moving average of 100 episodes",
        "evaluation return, mean ± std over 10 episodes",
    ]


def test_the_score_plot_draws_each_episodes_return_against_its_number(tmp_path, figure):
    run = _run(
        tmp_path / "run",
        0,
        [{"step": 200, "time/elapsed_s": 1.0}, {"step": 400, "time/elapsed_s": 2.0, "eval/return_mean": 9.0}],
        episodes=[(200, 1.0, 9), (200, 3.0, 11), (400, 5.0, 13)],
    )
    ax = figure([run], x="episodes").axes[0]
    raw, average, evaluation = ax.lines[:3]
    np.testing.assert_array_equal(raw.get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(average.get_ydata(), [1.0, 2.0, 3.0])
    assert list(evaluation.get_xdata()) == [3]  # three episodes had finished by the evaluation at step 400
    assert ax.get_xlabel() == "training episodes"


def test_any_metric_gets_a_panel_against_wall_clock_time_in_a_readable_unit(tmp_path, figure):
    rows = [{"step": s, "time/elapsed_s": t, "train/entropy": e} for s, t, e in [(100, 60, 0.7), (200, 600, 0.5)]]
    run = _run(tmp_path / "run", 0, rows, episodes=[(100, 1.0, 5), (200, 2.0, 5)])
    fig = figure([run], ["train/entropy", "episode/return"], x="time")
    entropy, returns = fig.axes
    np.testing.assert_allclose(entropy.lines[0].get_xdata(), [1.0, 10.0])  # 60 s and 600 s in minutes
    np.testing.assert_allclose(entropy.lines[0].get_ydata(), [0.7, 0.5])
    np.testing.assert_allclose(returns.lines[0].get_xdata(), [1.0, 10.0])  # each episode at its row's time
    assert (entropy.get_ylabel(), returns.get_ylabel()) == ("policy entropy", "training episode return")
    assert returns.get_xlabel() == "wall-clock time (min)"


def test_an_unknown_metric_is_refused_with_the_keys_the_runs_have(tmp_path, figure):
    run = _run(tmp_path / "run", 0, [{"step": 100, "train/entropy": 0.7}], episodes=[(100, 1.0, 5)])
    with pytest.raises(InputError) as error:
        figure([run], ["nonsense"])
    assert str(error.value) == (
        "no run has logged 'nonsense'; the runs have: train/entropy, episode/return, episode/length."
    )
    with pytest.raises(InputError, match="use one of steps, episodes, time"):
        figure([run], x="updates")


def test_a_run_on_a_dataset_shows_its_evaluations_against_gradient_updates(tmp_path, figure):
    run = _run(tmp_path / "run", 0, [(1000, 10.0), (2000, 20.0)], step_unit="update", algo="bcq")
    ax = figure([run]).axes[0]
    (line,) = ax.lines  # no training curve: the evaluations joined by a line
    assert line.get_linestyle() == "-" and list(line.get_ydata()) == [10.0, 20.0]
    assert ax.get_xlabel() == "gradient updates"
    with pytest.raises(InputError, match="has no episodes.csv"):
        figure([run], x="episodes")


def test_runs_that_differ_only_by_set_values_are_labelled_by_them_and_seeds_are_one_curve(tmp_path, figure):
    a = _run(tmp_path / "a", 0, [(1000, 10.0), (2000, 20.0)], learning_rate=0.001)
    b = _run(tmp_path / "b", 1, [(1000, 30.0), (2000, 40.0)], learning_rate=0.001)
    c = _run(tmp_path / "c", 0, [(1000, 50.0), (2000, 60.0)], learning_rate=0.0003)
    ax = figure([a, b, c], ["eval/return_mean"]).axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "ppo CartPole-v1 [default] learning_rate=0.001 (2 seeds)",
        "ppo CartPole-v1 [default] learning_rate=0.0003",
    ]
    mean, single = ax.lines
    np.testing.assert_allclose(mean.get_ydata(), [20.0, 30.0])  # (10 + 30) / 2, (20 + 40) / 2


def test_the_band_interpolates_two_seeds_onto_the_steps_both_have_reached():
    # Seed 0 evaluates at 0, 100, 200; seed 1 at 50, 150, 250. The common stretch is [50, 200] and the
    # grid every step either evaluated in it: 50, 100, 150, 200. Seed 0 there, linearly: 5, 10, 15, 20;
    # seed 1: 5, 10 (half way from 5 to 15), 15, 30 (half way from 15 to 45).
    grid, values = align_curves(
        [
            (np.array([0.0, 100.0, 200.0]), np.array([0.0, 10.0, 20.0])),
            (np.array([50.0, 150.0, 250.0]), np.array([5.0, 15.0, 45.0])),
        ]
    )
    np.testing.assert_array_equal(grid, [50.0, 100.0, 150.0, 200.0])
    np.testing.assert_allclose(values, [[5.0, 10.0, 15.0, 20.0], [5.0, 10.0, 15.0, 30.0]])
    np.testing.assert_allclose(values.mean(0), [5.0, 10.0, 15.0, 25.0])
    np.testing.assert_allclose(values.std(0), [0.0, 0.0, 0.0, 5.0])


def test_runs_that_evaluate_once_are_drawn_as_points(tmp_path, figure):
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)])
    b = _run(tmp_path / "b", 1, [(10_240, 200.0)])
    ax = figure([a, b], ["eval/return_mean"]).axes[0]
    assert not ax.lines  # no common stretch of steps, so no mean line ...
    (points,) = ax.collections  # ... but each run's evaluation as a point
    np.testing.assert_array_equal(points.get_offsets(), [[10_000, 100.0], [10_240, 200.0]])

    (line,) = figure([a], ["eval/return_mean"]).axes[0].lines  # a single evaluation: a line with a marker
    assert line.get_marker() == "o" and list(line.get_xdata()) == [10_000]


def test_a_missing_output_folder_is_refused(tmp_path):
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)])
    with pytest.raises(InputError, match="does not exist"):
        plot_runs([a], tmp_path / "missing" / "curves.png")


def test_axes_are_named_in_words_and_the_step_unit_is_the_runs_own(tmp_path, figure):
    a = _run(tmp_path / "a", 0, [(1000, 10.0), (2000, 20.0)])
    ax = figure([a], ["eval/return_mean"]).axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("environment steps", "evaluation return")  # not eval/return_mean
    b = _run(tmp_path / "b", 0, [(1000, 10.0)], step_unit="update")  # config.yaml: its steps are updates
    assert figure([b], ["eval/return_mean"]).axes[0].get_xlabel() == "gradient updates"
    assert figure([a, b], ["eval/return_mean"]).axes[0].get_xlabel() == "steps"  # neither unit for both


def test_legend_entries_show_lines_in_the_colour_of_what_they_name_also_for_points(tmp_path, figure):
    """Two seeds of one evaluation each are drawn as points; their legend entry is still a line."""
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)], learning_rate=0.001)
    b = _run(tmp_path / "b", 1, [(10_240, 200.0)], learning_rate=0.001)
    c = _run(tmp_path / "c", 0, [(1000, 50.0), (2000, 60.0)], learning_rate=0.0003)
    ax = figure([a, b, c], ["eval/return_mean"]).axes[0]
    handles = ax.get_legend().legend_handles
    assert [h.get_linestyle() for h in handles] == ["-", "-"]
    (points,) = ax.collections
    (line,) = ax.lines
    assert to_hex(points.get_facecolor()[0]) == to_hex(handles[0].get_color())
    assert to_hex(line.get_color()) == to_hex(handles[1].get_color())
    assert handles[0].get_color() != handles[1].get_color()


def test_a_configuration_has_its_colour_whatever_order_the_runs_come_in(tmp_path, figure):
    runs = [_run(tmp_path / f"r{lr}", 0, [(1000, lr), (2000, lr)], learning_rate=lr) for lr in (0.1, 0.2, 0.3)]

    def colours(order):
        ax = figure(order, ["eval/return_mean"]).axes[0]
        return {line.get_ydata()[0]: to_hex(line.get_color()) for line in ax.lines}

    forward, backward = colours(runs), colours(runs[::-1])
    assert forward == backward and len(set(forward.values())) == 3
    # matplotlib's first three colours, in the configurations' sorted order (learning_rate 0.1, 0.2, 0.3)
    assert [forward[lr] for lr in (0.1, 0.2, 0.3)] == ["#1f77b4", "#ff7f0e", "#2ca02c"]


def test_a_configuration_has_one_colour_in_every_figure_of_its_directory(tmp_path, figure):
    """Three configurations in one folder (a sweep's): a figure of the third alone colours it as the figure of all
    three does (matplotlib's third colour), not with the first colour a lone curve would otherwise take."""
    runs = [_run(tmp_path / f"r{lr}", 0, [(1000, lr), (2000, lr)], learning_rate=lr) for lr in (0.1, 0.2, 0.3)]
    everything = figure(runs, ["eval/return_mean"]).axes[0]
    alone = figure(runs[2:], ["eval/return_mean"]).axes[0]
    third = next(line for line in everything.lines if line.get_ydata()[0] == 0.3)
    assert to_hex(alone.lines[0].get_color()) == to_hex(third.get_color()) == "#2ca02c"
