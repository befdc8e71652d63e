"""Learning-curve figures: labels by what differs, the band over seeds on a common grid of steps,
curves of a single evaluation drawn as points, axes named in words, a colour per configuration and
legend entries that show lines (checked on matplotlib's artists, not pixels)."""

import numpy as np
import pytest
import yaml
from matplotlib.colors import to_hex

import acrl.core.plotting
from acrl.core.errors import InputError
from acrl.core.plotting import align_curves, curve_labels, plot_runs


def _run(path, seed, rows, **settings):
    path.mkdir()
    config = {
        "algo": "ppo",
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
    (path / "metrics.csv").write_text("step,eval/return_mean\n" + "".join(f"{s},{v}\n" for s, v in rows))
    return path


@pytest.fixture
def drawn(monkeypatch):
    """The figures plot_runs draws, kept open instead of written, the latest last."""
    kept = []

    def keep(fig, out):
        kept.append(fig)
        return out

    monkeypatch.setattr(acrl.core.plotting, "save_figure", keep)
    yield kept
    for fig in kept:
        acrl.core.plotting.plt.close(fig)


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


def test_runs_that_differ_only_by_set_values_are_labelled_by_them_and_seeds_are_one_curve(tmp_path, drawn):
    a = _run(tmp_path / "a", 0, [(1000, 10.0), (2000, 20.0)], learning_rate=0.001)
    b = _run(tmp_path / "b", 1, [(1000, 30.0), (2000, 40.0)], learning_rate=0.001)
    c = _run(tmp_path / "c", 0, [(1000, 50.0), (2000, 60.0)], learning_rate=0.0003)
    plot_runs([a, b, c], tmp_path / "curves.png")
    ax = drawn[-1].axes[0]
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


def test_runs_that_evaluate_once_are_drawn_as_points(tmp_path, drawn):
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)])
    b = _run(tmp_path / "b", 1, [(10_240, 200.0)])
    plot_runs([a, b], tmp_path / "curves.png")
    ax = drawn[-1].axes[0]
    assert not ax.lines  # no common stretch of steps, so no mean line ...
    (points,) = ax.collections  # ... but each run's evaluation as a point
    np.testing.assert_array_equal(points.get_offsets(), [[10_000, 100.0], [10_240, 200.0]])

    plot_runs([a], tmp_path / "one.png")  # a single run with a single evaluation: a line with a marker
    (line,) = drawn[-1].axes[0].lines
    assert line.get_marker() == "o" and list(line.get_xdata()) == [10_000]


def test_a_missing_output_folder_is_refused(tmp_path):
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)])
    with pytest.raises(InputError, match="does not exist"):
        plot_runs([a], tmp_path / "missing" / "curves.png")


def test_axes_are_named_in_words_and_offline_runs_count_gradient_updates(tmp_path, drawn):
    a = _run(tmp_path / "a", 0, [(1000, 10.0), (2000, 20.0)])
    plot_runs([a], tmp_path / "curves.png")
    ax = drawn[-1].axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("environment steps", "evaluation return")  # not eval/return_mean
    b = _run(tmp_path / "b", 0, [(1000, 10.0)], dataset="final.h5")
    plot_runs([b], tmp_path / "offline.png")
    assert drawn[-1].axes[0].get_xlabel() == "gradient updates"
    plot_runs([a, b], tmp_path / "both.png")  # not every run offline: their steps are not all updates
    assert drawn[-1].axes[0].get_xlabel() == "environment steps"


def test_legend_entries_show_lines_in_the_colour_of_what_they_name_also_for_points(tmp_path, drawn):
    """Two seeds of one evaluation each are drawn as points; their legend entry is still a line."""
    a = _run(tmp_path / "a", 0, [(10_000, 100.0)], learning_rate=0.001)
    b = _run(tmp_path / "b", 1, [(10_240, 200.0)], learning_rate=0.001)
    c = _run(tmp_path / "c", 0, [(1000, 50.0), (2000, 60.0)], learning_rate=0.0003)
    plot_runs([a, b, c], tmp_path / "curves.png")
    ax = drawn[-1].axes[0]
    handles = ax.get_legend().legend_handles
    assert [h.get_linestyle() for h in handles] == ["-", "-"]
    (points,) = ax.collections
    (line,) = ax.lines
    assert to_hex(points.get_facecolor()[0]) == to_hex(handles[0].get_color())
    assert to_hex(line.get_color()) == to_hex(handles[1].get_color())
    assert handles[0].get_color() != handles[1].get_color()


def test_a_configuration_has_its_colour_whatever_order_the_runs_come_in(tmp_path, drawn):
    runs = [_run(tmp_path / f"r{lr}", 0, [(1000, lr), (2000, lr)], learning_rate=lr) for lr in (0.1, 0.2, 0.3)]

    def colours(order):
        plot_runs(order, tmp_path / "curves.png")
        ax = drawn[-1].axes[0]
        return {line.get_ydata()[0]: to_hex(line.get_color()) for line in ax.lines}

    forward, backward = colours(runs), colours(runs[::-1])
    assert forward == backward and len(set(forward.values())) == 3
    # matplotlib's first three colours, in the configurations' sorted order (learning_rate 0.1, 0.2, 0.3)
    assert [forward[lr] for lr in (0.1, 0.2, 0.3)] == ["#1f77b4", "#ff7f0e", "#2ca02c"]
