import pytest
import yaml

from acrl.core.errors import InputError
from acrl.core.plotting import _group, plot_runs


def _run(path, seed, total_steps, rows):
    path.mkdir()
    config = {"algo": "ppo", "config": {"env_id": "CartPole-v1", "seed": seed, "total_steps": total_steps,
                                        "torch_threads": 1, "preset": "default"}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    (path / "metrics.csv").write_text("step,eval/return_mean\n" + "".join(f"{s},{v}\n" for s, v in rows))
    return path


def test_runs_group_by_config_without_seed(tmp_path):
    a = _run(tmp_path / "a", 0, 50_000, [(10_000, 100.0)])
    b = _run(tmp_path / "b", 1, 50_000, [(10_000, 200.0)])
    c = _run(tmp_path / "c", 0, 12_000, [(10_000, 300.0)])
    assert _group(a)[1] == _group(b)[1] != _group(c)[1]
    assert _group(a)[0] == _group(c)[0] == "ppo CartPole-v1 [default]"
    assert plot_runs([a, b, c], tmp_path / "curves.png").stat().st_size > 0  # one point per run still plots
    with pytest.raises(InputError, match="does not exist"):
        plot_runs([a], tmp_path / "missing" / "curves.png")
