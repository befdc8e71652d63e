"""`acrl experiment extrapolation|concurrent` on a tiny budget: the files, the table's contents,
the concurrent learners' use of the behavioral agent's growing buffer, and bad input. They run on
the local process pool, the extrapolation experiment where Ray cannot be imported."""

import csv
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from acrl import load
from acrl.cli import main
from acrl.core.errors import InputError
from acrl.core.loop import Callback
from acrl.offline.experiments import run_experiment
from acrl.offline.jobs import VALUE_KEYS, episode_returns, run_concurrent
from acrl.offline.spec import CONCURRENT, EXTRAPOLATION
from acrl.parts.datasets import OfflineDataset, load_dataset
from acrl.parts.sources import DatasetSource
from tests.conftest import ROOT, git_head

TINY_FLAGS = [
    "--behavioral-set",
    "start_steps=100",
    "hidden_sizes=[16]",
    "--ddpg-set",
    "hidden_sizes=[16]",
    "--bcq-set",
    "actor_hidden_sizes=[16]",
    "critic_hidden_sizes=[16]",
    "vae_hidden_sizes=[16]",
    "--bc-set",
    "hidden_sizes=[16]",
    "--vae-bc-set",
    "hidden_sizes=[16]",
    "--dqn-set",
    "hidden_sizes=[16]",
    "action_bins=5",
]
"""Networks of 16 units for every agent, and a behavioral DDPG that starts learning after 100 steps."""


def without_ray(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """`python -m acrl ARGS` where `import ray` fails, in the driver and in every process it starts
    (a package named ray first on the path, as for an install without the ray extra)."""
    blocked = tmp_path / "no-ray" / "ray"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(blocked.parent), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "acrl", *args], env=env, capture_output=True, text=True, timeout=600)


TINY_EXPERIMENT = [
    *("experiment", "extrapolation", "--env", "Pendulum-v1", "--steps-behavioral", "300", "--updates", "150"),
    *("--dataset-size", "250", "--eval-freq", "150", "--eval-episodes", "1", "--seeds", "0", *TINY_FLAGS),
]
"""An extrapolation experiment of one seed in about a minute."""


@pytest.fixture(scope="module")
def tiny_experiment(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`TINY_EXPERIMENT` run once for the module, without Ray: its directory and the process."""
    tmp_path = tmp_path_factory.mktemp("tiny")
    out = tmp_path / "exp"
    return out, without_ray(tmp_path, *TINY_EXPERIMENT, "--out", str(out))


def test_extrapolation_without_ray_writes_table_figure_and_runs(tiny_experiment):
    out, result = tiny_experiment
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "extrapolation.json").read_text())
    assert "| BCQ |" in result.stdout
    # One bar counts the jobs' steps (2 x 300 behavioral, 2 x 250 collected, 15 x 150 offline), and a
    # finished job's line is short (its numbers, not its result's JSON).
    assert "experiment jobs: 100%" in result.stderr and "| 3350/3350 [" in result.stderr, result.stderr
    assert "19 of 19 jobs done]" in result.stderr
    done = [line for line in result.stderr.replace("\r", "\n").splitlines() if line.startswith("done ")]
    assert len(done) == 2 + 2 + 15 and max(len(line) for line in done) < 120, done
    assert {p.name for p in out.iterdir()} == {
        "extrapolation.json",
        "extrapolation.md",
        "extrapolation.png",
        "s0",
        "experiment.yaml",
        "sessions.json",
    }
    assert summary["wall_clock_s"] > 0  # this session's, from sessions.json
    meta, ran = summary["meta"], json.loads((out / "sessions.json").read_text())["experiment jobs"]
    assert meta["command"] == shlex.join(["python", "-m", "acrl", *TINY_EXPERIMENT, "--out", str(out)])
    assert meta["sessions"] == ran and len(ran) == 1 and ran[0]["commit"] == meta["commit"] == git_head()
    assert list(summary["table"]) == ["behavioral", "bcq", "ddpg", "bc", "vae_bc", "dqn"]  # the paper's agents
    assert all(list(row) == list(EXTRAPOLATION.buffers) for row in summary["table"].values())
    final = load_dataset(out / "s0" / "final" / "final.h5")  # every transition of its own behavioral run
    assert len(final) == 300 and final.attrs["noise_std"] == 0.5
    assert len(load_dataset(out / "s0" / "data-imperfect" / "imperfect.h5")) == 250
    results = summary["results"]
    for kind in ("final", "imitation", "imperfect"):
        curve = results[kind]["bcq"][0]["curve"]
        assert [step for step, _ in curve] == [150]  # evaluated every eval_freq updates
        agent = load(f"{results[kind]['bcq'][0]['run_dir']}/checkpoints/best.pt")  # `acrl evaluate` works
        assert agent.algo == "bcq" and agent.num_steps == 150
    concurrent = results["concurrent"]
    for algo in ("bcq", "bc", "vae_bc", "dqn"):
        assert [step for step, _ in concurrent[algo][0]["curve"]] == [150, 300]
    assert [step for step, _ in concurrent["behavioral"][0]["curve"]] == [150, 300]
    # Value estimates at every evaluation; one seed: the table's cells are that run's last ones, std 0.
    ddpg_values = results["imitation"]["ddpg"][0]["values"]
    assert [step for step, _ in ddpg_values["q_initial_mean"]] == [150]
    cell = summary["table"]["ddpg"]["imitation"]
    assert cell["q_initial"] == [ddpg_values["q_initial_mean"][-1][1], 0.0]
    assert cell["true_value"] == [ddpg_values["discounted_return_mean"][-1][1], 0.0]
    assert cell["final"][0] == cell["iqm"] == results["imitation"]["ddpg"][0]["final"]
    assert not results["final"]["bc"][0]["values"]["q_initial_mean"]  # BC has no critic, nor VAE-BC
    assert not results["final"]["vae_bc"][0]["values"]["q_initial_mean"]
    dqn = load(f"{results['imperfect']['dqn'][0]['run_dir']}/checkpoints/best.pt")  # 5 bins, as --dqn-set says
    assert dqn.config.action_bins == 5 and dqn.net.head.out_features == 5 and dqn.config.gamma == 0.99
    assert dqn.config.checkpoint_freq == 150  # latest.pt at every evaluation: a killed run resumes from there
    assert [step for step, _ in results["imperfect"]["dqn"][0]["values"]["q_initial_mean"]] == [150]
    md = (out / "extrapolation.md").read_text()
    assert "| imperfect |" in md and "| BC |" in md and "Value estimates" in md
    assert "| VAE-BC |" in md and md.count("| DQN (discretised) |") == 2  # returns, and value estimates
    # The imitation data has no noise: its episodes score what the behavioral policy does.
    imitation = results["imitation"]["behavioral"][0]
    assert imitation["return"] == pytest.approx(imitation["data_episode_return"], rel=0.5)


def test_datasets_only_writes_the_full_experiments_datasets(tiny_experiment, tmp_path, capsys):
    """The behavioral DDPG trained alone is the concurrent run's (its learners never act nor draw from its
    random streams): the same final, imitation and imperfect transitions, and the returns extrapolation.json
    holds for them; no offline run."""
    full, result = tiny_experiment
    assert result.returncode == 0, result.stderr
    out = tmp_path / "data"
    assert main([*TINY_EXPERIMENT, "--datasets-only", "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "datasets.json").read_text())
    assert summary["meta"]["sessions"] == json.loads((out / "sessions.json").read_text())["experiment jobs"]
    expected = json.loads((full / "extrapolation.json").read_text())["results"]
    for kind in ("final", "imitation", "imperfect"):
        ours = load_dataset(summary["datasets"][kind][0]["path"])
        theirs = load_dataset(full / "s0" / ("final" if kind == "final" else f"data-{kind}") / f"{kind}.h5")
        for field in ("observations", "actions", "rewards", "next_observations", "terminals", "timeouts"):
            np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field), err_msg=f"{kind} {field}")
        behavioral = expected[kind]["behavioral"][0]
        assert summary["datasets"][kind][0]["return"] == behavioral["return"]
        assert summary["datasets"][kind][0]["data_episode_return"] == behavioral["data_episode_return"]
    assert sorted(p.name for p in (out / "s0").iterdir()) == ["behavioral", "data-imitation", "data-imperfect", "final"]
    assert '"imperfect"' in capsys.readouterr().out


def test_learners_added_later_train_on_the_same_datasets_and_merge_into_the_table(tiny_experiment, tmp_path):
    """`--learners bc` alone on the same settings is the full experiment's BC: its concurrent run (beside the
    behavioral agent only) and its offline runs end at the same returns to the last digit, over the same
    behavioral entries. Merged with the full experiment's summary less BC (a table from before BC), it gives
    the full experiment's table back."""
    full, result = tiny_experiment
    assert result.returncode == 0, result.stderr
    out = tmp_path / "bc"
    assert main([*TINY_EXPERIMENT, "--learners", "bc", "--out", str(out), "--no-progress"]) == 0
    part = json.loads((out / "extrapolation.json").read_text())
    expected = json.loads((full / "extrapolation.json").read_text())
    assert list(part["table"]) == ["behavioral", "bc"]
    assert sorted(p.name for p in (out / "s0" / "concurrent").iterdir()) == ["bc", "behavioral", "final.h5", "job.json"]
    for kind in EXTRAPOLATION.buffers:
        assert part["results"][kind]["behavioral"] == expected["results"][kind]["behavioral"], kind
        assert part["results"][kind]["bc"][0]["curve"] == expected["results"][kind]["bc"][0]["curve"], kind
    before_bc = {
        **expected,
        "results": {k: {a: r for a, r in v.items() if a != "bc"} for k, v in expected["results"].items()},
    }
    (tmp_path / "before.json").write_text(json.dumps(before_bc))
    argv = ["experiment", "extrapolation", "--env", "Pendulum-v1", "--merge", str(tmp_path / "before.json")]
    assert main([*argv, str(out / "extrapolation.json"), "--out", str(tmp_path / "merged"), "--no-progress"]) == 0
    merged = json.loads((tmp_path / "merged" / "extrapolation.json").read_text())
    assert merged["table"] == expected["table"] and list(merged["table"]) == list(expected["table"])
    assert merged["seeds"] == [0] and merged["acrl_version"] == expected["acrl_version"]
    assert merged["meta"]["parts"] == [expected["meta"], part["meta"]]  # each part's command, commit, sessions
    assert merged["meta"]["load_average_before"] is None  # a merge measures nothing
    with pytest.raises(InputError, match="--datasets-only trains none of them"):
        run_experiment(EXTRAPOLATION, "Pendulum-v1", tmp_path / "x", learners=["bc"], datasets_only=True)
    with pytest.raises(InputError, match="learners must be one or more of bcq, ddpg, bc, vae_bc, dqn, each once"):
        run_experiment(EXTRAPOLATION, "Pendulum-v1", tmp_path / "x", learners=["bc", "bc"])
    assert not (tmp_path / "x").exists()


def test_concurrent_learners_learn_from_the_behavioral_buffer_without_acting(tmp_path, capsys):
    out = tmp_path / "c"
    argv = [
        "experiment",
        "concurrent",
        "--env",
        "Pendulum-v1",
        "--steps-behavioral",
        "250",
        "--eval-freq",
        "250",
        "--eval-episodes",
        "1",
        "--seeds",
        "1",
        "--out",
        str(out),
        "--no-progress",
        *TINY_FLAGS,
    ]
    assert main(argv) == 0
    assert "| BCQ |" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {
        "concurrent.json",
        "concurrent.md",
        "concurrent.png",
        "s1",
        "experiment.yaml",
        "sessions.json",
    }
    concurrent = json.loads((out / "concurrent.json").read_text())
    assert concurrent["meta"]["sessions"] == json.loads((out / "sessions.json").read_text())["experiment jobs"]
    assert list(concurrent["table"]) == ["behavioral", *CONCURRENT.names]
    results = concurrent["results"]["concurrent"]
    bcq = load(f"{results['bcq'][0]['run_dir']}/checkpoints/latest.pt")
    ddpg = load(f"{results['ddpg'][0]['run_dir']}/checkpoints/latest.pt")
    # One update per behavioral step, from the first one on: 250 updates, evaluated at the same steps.
    assert bcq.num_steps == ddpg.num_steps == 250
    final = out / "s1" / "concurrent" / "final.h5"  # the behavioral agent's buffer, which every learner records
    assert bcq.config.dataset == ddpg.config.dataset == str(final) and len(load_dataset(final)) == 250
    assert isinstance(ddpg.source, DatasetSource)  # it learns from the data, never acting
    assert all([step for step, _ in results[name][0]["curve"]] == [250] for name in CONCURRENT.names)
    dqn = load(f"{results['dqn'][0]['run_dir']}/checkpoints/latest.pt")
    assert dqn.num_steps == 250 and dqn.config.action_bins == 5


TINY = {
    "behavioral_overrides": {"start_steps": 100, "hidden_sizes": [16]},
    "ddpg_overrides": {"hidden_sizes": [16]},
    "bcq_overrides": {"actor_hidden_sizes": [16], "critic_hidden_sizes": [16], "vae_hidden_sizes": [16]},
    "bc_overrides": {"hidden_sizes": [16]},
    "vae_bc_overrides": {"hidden_sizes": [16]},
    "dqn_overrides": {"hidden_sizes": [16], "action_bins": 5},
}
"""TINY_FLAGS as `run_concurrent`'s overrides."""


class KilledAfterCheckpoints(Callback):
    """Raises once the last of the six agents (DQN) has written latest.pt at `step`: a kill between rounds."""

    def __init__(self, step: int):
        self.step = step

    def on_checkpoint(self, step: int, path: Path) -> None:
        if step == self.step and path.parents[1].name == "dqn":
            raise RuntimeError("killed")


def test_an_interrupted_concurrent_run_resumes_from_its_last_round(tmp_path):
    """Killed after the checkpoints at step 1,000 of 2,000 (evaluations every 1,000), the same call goes on
    from 1,000: every agent's metrics hold the steps 1,000 and 2,000 once, and the final buffer holds all
    2,000 transitions (the behavioral agent's checkpoint brought back the buffer the learners share). Other
    settings in that directory are refused."""
    out = tmp_path / "c"
    settings = {"steps_behavioral": 2000, "eval_freq": 1000, "eval_episodes": 1}
    args = {"spec": CONCURRENT, "env_id": "Pendulum-v1", "out_dir": out, "settings": settings, "overrides": TINY}
    with pytest.raises(RuntimeError, match="killed"):
        run_concurrent(**args, progress=False, callbacks=[KilledAfterCheckpoints(1000)])
    assert not (out / "final.h5").exists()
    result = run_concurrent(**args, progress=False)
    assert len(load_dataset(result["final_dataset"])) == 2000
    for name, run_dir in result["run_dirs"].items():
        rows = [row for row in csv.DictReader(open(Path(run_dir) / "metrics.csv")) if row["eval/return_mean"]]
        assert [int(float(row["step"])) for row in rows] == [1000, 2000], name
        assert json.loads((Path(run_dir) / "eval.json").read_text())["resumed_at"] == 1000, name
    with pytest.raises(InputError, match="not a concurrent run to resume with these settings"):
        run_concurrent(**{**args, "settings": {**settings, "eval_episodes": 2}}, progress=False)


def test_episode_returns_skip_the_unfinished_episode():
    terminals = np.array([False, True, False, False, False, False])
    timeouts = np.array([False, False, False, False, True, False])
    data = OfflineDataset(
        np.zeros((6, 1), np.float32),
        np.zeros((6, 1), np.float32),
        np.arange(1, 7, dtype=np.float32),
        np.zeros((6, 1), np.float32),
        terminals,
        timeouts,
    )
    assert episode_returns(data).tolist() == [3.0, 12.0]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["experiment", "concurrent", "--env", "Pendulum-v1", "--updates", "5"], "unrecognized arguments --updates 5"),
        (["experiment", "concurrent", "--env", "Pendulum-v1", "--merge", "a.json"], "unrecognized arguments --merge"),
        (["experiment", "extrapolation", "--env", "CartPole-v1", "--steps-behavioral", "10"], "Discrete"),
        (["experiment", "extrapolation", "--env", "Pendulum-v9"], "unknown environment id"),
        (["experiment", "extrapolation", "--env", "Pendulum-v1", "--bcq-set", "lmbda=2"], "--bcq-set (bcq): lmbda"),
    ],
)
def test_experiment_bad_input_exits_2_before_announcing_or_writing_anything(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert " -> " not in err and not (tmp_path / "out").exists()  # before: "experiment ... -> out" came first


def test_an_address_without_ray_is_one_line_naming_the_ray_extra(tmp_path):
    result = without_ray(
        tmp_path,
        "experiment",
        "concurrent",
        "--env",
        "Pendulum-v1",
        "--steps-behavioral",
        "2000",
        "--behavioral-set",
        "start_steps=1000",
        "--address",
        "auto",
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "acrl: error: --address auto needs ray, which is not installed: install "
        "acrl's ray extra: pip install -e '.[ray]' (./run setup does)."
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["concurrent", "extrapolation"])
def test_a_behavioral_budget_of_only_random_steps_warns_once_on_one_line_before_any_job(tmp_path, capsys, name):
    # The validation on the driver warns; the jobs never start here (--out holds another experiment).
    # The whole pipeline with the same warning: tests/algos/test_cli.py (slow).
    out = tmp_path / "E"
    out.mkdir()
    (out / "experiment.yaml").write_text(yaml.safe_dump({"experiment": "another"}))
    argv = [
        "experiment",
        name,
        "--env",
        "Pendulum-v1",
        "--steps-behavioral",
        "50",
        "--eval-freq",
        "50",
        "--behavioral-set",
        "start_steps=100",
        "--out",
        str(out),
    ]
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if "warning" in line.lower()]
    assert lines == [
        "acrl: warning: total_steps 50 <= start_steps 100: every action will be uniformly random and no "
        "gradient update will happen. Train longer or lower start_steps (e.g. start_steps=5)."
    ]


def old_results(value: float) -> dict:
    """results[kind][agent] as `run_experiment` assembles them, one seed, every learner scoring `value`,
    but the concurrent runs without VAE-BC and DQN: an experiment from before they were added."""
    run = {"curve": [[10, value]], "final": value, "best": value, "values": {key: [] for key in VALUE_KEYS}}
    results = {kind: {"behavioral": [{"return": 5.0, "data_episode_return": 4.0}]} for kind in EXTRAPOLATION.buffers}
    for kind in EXTRAPOLATION.buffers:
        for algo in EXTRAPOLATION.names:
            results[kind][algo] = [] if kind == "concurrent" and algo in ("vae_bc", "dqn") else [dict(run)]
    return results


def test_an_experiment_from_before_vae_bc_and_dqn_resumes_with_their_concurrent_cells_empty(tmp_path, monkeypatch):
    """Its experiment.yaml lacks the new agents' (empty) overrides: the same experiment, resumed; given
    overrides make it another. Its concurrent runs lack the new learners: their cells are None and '-'."""
    from acrl.core.errors import InputError
    from acrl.offline.experiments import record_settings
    from acrl.offline.report import experiment_markdown, results_table

    monkeypatch.setattr("acrl.sweep.results.BOOTSTRAP_REPS", 50)  # one seed: the CI is the value whatever the reps

    settings = {"experiment": "extrapolation", "env_id": "Pendulum-v1", "bcq_overrides": {}, "bc_overrides": {}}
    (tmp_path / "experiment.yaml").write_text(yaml.safe_dump(settings))
    record_settings(tmp_path, {**settings, "vae_bc_overrides": {}, "dqn_overrides": {}}, "resume")  # no error
    with pytest.raises(InputError, match="holds another experiment"):
        record_settings(tmp_path, {**settings, "vae_bc_overrides": {}, "dqn_overrides": {"action_bins": 5}}, "x")
    table = results_table(EXTRAPOLATION, old_results(-150.0))
    assert table["dqn"]["concurrent"] == {
        "final": None,
        "iqm": None,
        "iqm_ci": None,
        "best": None,
        "q_initial": None,
        "true_value": None,
        "q_data": None,
        "q_policy": None,
    }
    assert table["dqn"]["imitation"]["final"] == [-150.0, 0.0] and table["dqn"]["imitation"]["iqm"] == -150.0
    summary = {
        "env_id": "Pendulum-v1",
        "seeds": [0],
        "steps_behavioral": 10,
        "final_noise": 0.5,
        "dataset_size": 10,
        "updates": 10,
        "eval_episodes": 1,
        "eval_freq": 10,
        "table": table,
    }
    md = experiment_markdown(EXTRAPOLATION, summary)
    assert "| VAE-BC | -150.0 ± 0.0 (-150.0 [-150.0, -150.0]) | - | -150.0 ± 0.0 (-150.0 [-150.0, -150.0]) |" in md
    assert "-: no runs" in md and "DQN: each action dimension" in md
    bcq_only = experiment_markdown(EXTRAPOLATION, {**summary, "table": {k: table[k] for k in ("behavioral", "bcq")}})
    assert "### BCQ on Pendulum-v1" in bcq_only and "-: no runs" not in bcq_only and "DQN:" not in bcq_only


def experiment_part(
    seeds: list[int], bcq_finals: list[float], tmp_path: Path, learners: tuple[str, ...] | None = None, **settings
) -> Path:
    """An extrapolation.json of `seeds` and `learners` (default all; every learner's final evaluation of seed i
    is bcq_finals[i], the behavioral return 100 + seed), written to tmp_path/part-SEEDS[-LEARNERS].json;
    `settings` replace the defaults."""
    from acrl.core.version import __version__

    def run(value: float) -> dict:
        return {"curve": [[10, value]], "final": value, "best": value, "values": {key: [] for key in VALUE_KEYS}}

    results = {
        kind: {
            "behavioral": [{"return": 100.0 + seed, "data_episode_return": 4.0} for seed in seeds],
            **{algo: [run(v) for v in bcq_finals] for algo in learners or EXTRAPOLATION.names},
        }
        for kind in EXTRAPOLATION.buffers
    }
    summary = {
        "env_id": "Pendulum-v1",
        "seeds": seeds,
        "steps_behavioral": 10,
        "updates": 10,
        "dataset_size": 10,
        "final_noise": 0.5,
        "eval_freq": 10,
        "eval_episodes": 1,
        "overrides": {key: {} for key in EXTRAPOLATION.options},
        "wall_clock_s": 10.0 * len(seeds),
        "acrl_version": __version__,
        "results": results,
        "table": {},  # what merging recomputes
        **settings,
    }
    path = tmp_path / f"part-{'-'.join(map(str, seeds))}{'-' + '-'.join(learners) if learners else ''}.json"
    path.write_text(json.dumps(summary))
    return path


def test_merging_parts_of_one_experiment_gives_the_table_over_all_their_seeds(tmp_path, capsys, monkeypatch):
    """Seeds 0 and 2 in one part (BCQ 1 and 5), seed 1 in another (3): the merged experiment holds seeds
    0, 1, 2 in that order, BCQ's final 1, 3, 5 (mean 3, population std sqrt(8/3)), behavioral 100, 101, 102."""
    monkeypatch.setattr("acrl.sweep.results.BOOTSTRAP_REPS", 50)
    first = experiment_part([0, 2], [1.0, 5.0], tmp_path)
    second = experiment_part([1], [3.0], tmp_path)
    out = tmp_path / "merged"
    argv = ["experiment", "extrapolation", "--env", "Pendulum-v1", "--merge", str(first), str(second)]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads((out / "extrapolation.json").read_text())
    assert summary["seeds"] == [0, 1, 2] and summary["wall_clock_s"] == 30.0
    assert [run["final"] for run in summary["results"]["imperfect"]["bcq"]] == [1.0, 3.0, 5.0]
    assert [b["return"] for b in summary["results"]["final"]["behavioral"]] == [100.0, 101.0, 102.0]
    assert summary["table"]["bcq"]["imperfect"]["final"] == pytest.approx([3.0, (8 / 3) ** 0.5])
    assert summary["table"]["behavioral"]["imitation"]["return"] == pytest.approx([101.0, (2 / 3) ** 0.5])
    assert {p.name for p in out.iterdir()} == {"extrapolation.json", "extrapolation.md", "extrapolation.png"}
    assert "| BCQ | 3.0 ± 1.6 (3.0 [" in capsys.readouterr().out


def test_merging_parts_of_other_learners_on_the_same_seeds_joins_their_columns(tmp_path, capsys, monkeypatch):
    """BCQ, DDPG and BC of seeds 0 and 1 (finals 1 and 3) in one part, VAE-BC and DQN of the same seeds (5 and 7)
    in another: one table of five learners, VAE-BC's mean (5 + 7) / 2 = 6, BCQ's 2, the seeds' behavioral
    returns 100 and 101 once each."""
    monkeypatch.setattr("acrl.sweep.results.BOOTSTRAP_REPS", 50)
    first = experiment_part([0, 1], [1.0, 3.0], tmp_path, ("bcq", "ddpg", "bc"))
    second = experiment_part([0, 1], [5.0, 7.0], tmp_path, ("vae_bc", "dqn"), acrl_version="9.9")
    out = tmp_path / "merged"
    argv = ["experiment", "extrapolation", "--env", "Pendulum-v1", "--merge", str(first), str(second)]
    assert main([*argv, "--out", str(out)]) == 0
    summary = json.loads((out / "extrapolation.json").read_text())
    assert list(summary["table"]) == ["behavioral", "bcq", "ddpg", "bc", "vae_bc", "dqn"]
    assert summary["table"]["vae_bc"]["final"]["final"] == [6.0, 1.0]
    assert summary["table"]["bcq"]["concurrent"]["final"] == [2.0, 1.0]
    assert [b["return"] for b in summary["results"]["imitation"]["behavioral"]] == [100.0, 101.0]
    assert summary["seeds"] == [0, 1] and summary["acrl_version"].endswith(", 9.9")
    assert "| VAE-BC | 6.0 ± 1.0 (" in capsys.readouterr().out


@pytest.mark.parametrize(
    "learners, settings, message",
    [
        (("bc", "dqn"), {}, "seed 0's BC is in parts 1 and 2"),
        (("dqn",), {"seeds": [0]}, "the parts lack DQN (discretised) seed 1"),
        (("dqn",), {"behavioral_return": 99.0}, "seed 0's final behavioral return is 99.0 in part 2 and 100.0 in"),
    ],
)
def test_merging_learners_refuses_overlaps_gaps_and_other_datasets(learners, settings, message, tmp_path, capsys):
    first = experiment_part([0, 1], [1.0, 3.0], tmp_path, ("bcq", "ddpg", "bc"))
    seeds = settings.get("seeds", [0, 1])
    second = experiment_part(seeds, [5.0] * len(seeds), tmp_path, learners)
    if "behavioral_return" in settings:  # the same seed, other data
        part = json.loads(second.read_text())
        part["results"]["final"]["behavioral"][0]["return"] = settings["behavioral_return"]
        second.write_text(json.dumps(part))
    argv = ["experiment", "extrapolation", "--env", "Pendulum-v1", "--merge", str(first), str(second)]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "second, flags, message",
    [
        ({"seeds": [2]}, [], "seed 2's BCQ is in parts 1 and 2"),
        ({"seeds": [1], "updates": 20}, [], "other settings than part 1 (updates: 20 against 10)"),
        ({"seeds": [1], "overrides": None}, [], "lacks overrides"),
        ({"seeds": [1], "acrl_version": None}, [], "lacks acrl_version"),
        ({"seeds": [1]}, ["--seeds", "1"], "give only --env and --out (got --seeds)"),
        ({"seeds": [1], "env_id": "Hopper-v5"}, [], "an experiment on 'Hopper-v5', not on --env 'Pendulum-v1'"),
    ],
)
def test_merging_refuses_parts_of_other_experiments_before_writing(second, flags, message, tmp_path, capsys):
    first = experiment_part([0, 2], [1.0, 5.0], tmp_path)
    other = experiment_part(second.pop("seeds"), [3.0], tmp_path, **second)
    if None in second.values():  # a part from before summaries recorded the overrides or the version
        other.write_text(json.dumps({k: v for k, v in json.loads(other.read_text()).items() if v is not None}))
    argv = ["experiment", "extrapolation", "--env", "Pendulum-v1", "--merge", str(first), str(other), *flags]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
