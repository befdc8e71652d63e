"""benchmarks/bcq_spectrum.py's parts: a spectrum run in pieces (seeds and buffers in separate sessions) merges
into the table of the whole, and refuses pieces that do not fit together."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def spectrum(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.setattr("acrl.sweep.results.BOOTSTRAP_REPS", 50)
    return importlib.import_module("bcq_spectrum")


def part(path: Path, seed: int, finals: dict[tuple[int, float], float], **settings) -> Path:
    """A result of one seed on the imitation buffer, the run of cell (n, phi) ending at finals[(n, phi)]."""
    runs = [
        {"kind": "imitation", "n": n, "phi": phi, "seed": seed, "final": final, "best": final}
        for (n, phi), final in finals.items()
    ]
    result = {
        "meta": {"command": f"python benchmarks/bcq_spectrum.py --seeds {seed}"},
        "env_id": "Hopper-v5",
        "dataset_size": 100,
        "updates": 10,
        "experiment_updates": 10,
        "eval_freq": 5,
        "eval_episodes": 1,
        "n": [1, 10],
        "phi": [0.0],
        "wall_clock_s": 60.0,
        "runs": runs,
        "reference": {},
        **settings,
    }
    path.write_text(json.dumps(result))
    return path


def test_parts_of_seeds_merge_into_the_table_over_all_of_them(spectrum, tmp_path, capsys):
    """Seed 0: n=1 scores 10, n=10 scores 30; seed 1: 20 and 50. Merged: n=1 mean 15 (std 5), n=10 40 (std 10)."""
    first = part(tmp_path / "a.json", 0, {(1, 0.0): 10.0, (10, 0.0): 30.0})
    second = part(tmp_path / "b.json", 1, {(1, 0.0): 20.0, (10, 0.0): 50.0})
    out = tmp_path / "merged.json"
    assert spectrum.main(["--merge", str(first), str(second), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["seeds"] == [0, 1] and result["kinds"] == ["imitation"] and result["wall_clock_s"] == 120.0
    assert {"command", "commit", "date"} <= set(result["meta"])  # the merge's own conditions; the parts' below
    assert result["meta"]["load_average_before"] is None  # a merge measures nothing
    n1, n10 = result["table"]["imitation"]["n=1, phi=0"], result["table"]["imitation"]["n=10, phi=0"]
    assert (n1["finals"], n1["mean"], n1["std"]) == ([10.0, 20.0], 15.0, 5.0)
    assert (n10["finals"], n10["mean"], n10["std"]) == ([30.0, 50.0], 40.0, 10.0)
    assert [p["meta"]["command"] for p in result["parts"]] == [
        "python benchmarks/bcq_spectrum.py --seeds 0",
        "python benchmarks/bcq_spectrum.py --seeds 1",
    ]
    assert "| 10 | " in out.with_suffix(".md").read_text() and "**imitation**" in capsys.readouterr().out


def test_parts_of_other_n_fill_the_grid_of_their_union(spectrum, tmp_path):
    """n = 1 in one part, n = 10 in the other, both of seed 0: the merged grid is n in {1, 10}, each cell of seed 0."""
    first = part(tmp_path / "a.json", 0, {(1, 0.0): 10.0}, n=[1])
    second = part(tmp_path / "b.json", 0, {(10, 0.0): 30.0}, n=[10])
    out = tmp_path / "m.json"
    assert spectrum.main(["--merge", str(first), str(second), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["n"] == [1, 10] and list(result["table"]["imitation"]) == ["n=1, phi=0", "n=10, phi=0"]
    assert result["table"]["imitation"]["n=10, phi=0"]["finals"] == [30.0]


@pytest.mark.parametrize(
    "second, message",
    [
        ({"seed": 1, "finals": {(1, 0.0): 20.0}}, "imitation, n=10, phi=0 has runs of seeds [0], not of all seeds"),
        ({"seed": 0, "finals": {(1, 0.0): 20.0, (10, 0.0): 50.0}}, "two runs of one cell and seed"),
        ({"seed": 1, "finals": {(1, 0.0): 20.0, (10, 0.0): 50.0}, "updates": 20}, "ran other settings than"),
    ],
)
def test_parts_that_do_not_fit_together_are_refused(spectrum, tmp_path, capsys, second, message):
    first = part(tmp_path / "a.json", 0, {(1, 0.0): 10.0, (10, 0.0): 30.0})
    other = part(tmp_path / "b.json", second.pop("seed"), second.pop("finals"), **second)
    with pytest.raises(SystemExit) as exc:
        spectrum.main(["--merge", str(first), str(other), "--out", str(tmp_path / "m.json")])
    assert exc.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
