"""The offline experiments' figure draws through the shared code: a learner's seeds as a mean with a band
in the learner's colour, and a legend whose entries are lines (checked on matplotlib's artists)."""

import numpy as np
from matplotlib.colors import to_hex

import acrl.offline.report
from acrl.offline.spec import EXTRAPOLATION


def test_the_experiment_figure_draws_each_learner_as_a_band_with_a_line_in_the_legend(monkeypatch):
    kept = []
    monkeypatch.setattr(acrl.offline.report, "save_figure", lambda fig, out: kept.append(fig) or out)
    values = {"q_initial_mean": [[1000, 1.0]], "discounted_return_mean": [[1000, 2.0]]}
    seeds = [[[1000, 10.0], [2000, 30.0]], [[1000, 20.0], [2000, 50.0]]]  # two seeds of each learner
    results = {
        kind: {
            "behavioral": [{"return": 5.0}],
            **{
                learner.name: [{"curve": curve, "values": values} for curve in seeds]
                for learner in EXTRAPOLATION.learners
            },
        }
        for kind in EXTRAPOLATION.buffers
    }
    acrl.offline.report.plot_experiment(EXTRAPOLATION, {"results": results, "env_id": "Hopper-v5"}, "x.png")
    top = kept[0].axes[0]
    bcq = EXTRAPOLATION.learners[0]
    mean = top.lines[0]
    np.testing.assert_allclose(mean.get_ydata(), [15.0, 40.0])  # (10 + 20) / 2, (30 + 50) / 2
    assert to_hex(mean.get_color()) == to_hex(bcq.color)
    np.testing.assert_allclose(top.collections[0].get_paths()[0].vertices[:, 1].max(), 50.0)  # mean + std at 2000
    legend = top.get_legend()
    assert [t.get_text() for t in legend.get_texts()][0] == bcq.label
    assert all(handle.get_linestyle() in ("-", "--") for handle in legend.legend_handles)
    acrl.offline.report.plt.close(kept[0])
