"""The `acrl` command line: help texts, the synopsis, one-line warnings and errors, and the bad-input messages."""

from __future__ import annotations

import dataclasses
import re
import tomllib
import warnings

import h5py
import pytest

from acrl.algos import ALGORITHMS, make_config
from acrl.cli import (
    HANDLERS,
    Collect,
    Evaluate,
    Experiment,
    Plot,
    Record,
    Resume,
    Sweep,
    Train,
    Tune,
    main,
    one_line_warnings,
    synopsis,
)
from acrl.cli_experiment import Concurrent, D4rl, Discrete, Extrapolation
from acrl.core.errors import InputError
from acrl.sweep.grid import SweepSpec
from tests.conftest import ROOT, run_cli

COMMANDS = {
    "train": Train,
    "resume": Resume,
    "evaluate": Evaluate,
    "record": Record,
    "plot": Plot,
    "collect": Collect,
    "experiment": Experiment,
    "sweep": Sweep,
    "tune": Tune,
}

SUBCOMMANDS = {
    **{name: cls for name, cls in COMMANDS.items() if cls is not Experiment},
    "experiment extrapolation": Extrapolation,
    "experiment concurrent": Concurrent,
    "experiment discrete": Discrete,
}
"""Each command line and its dataclass (`acrl experiment` only chooses one of its three)."""

TINY_BCQ = ["actor_hidden_sizes=[8]", "critic_hidden_sizes=[8]", "vae_hidden_sizes=[8]"]


def help_text(capsys, sub: str) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main([*sub.split(), "--help"])
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def help_entries(text: str) -> dict[str, str]:
    """{flags or positional metavar: description without its "(default: ...)" / "(required)"} of a help text.

    Entries follow a section title underlined with dashes; an entry starts at an indent of two,
    its flags and description apart by two spaces or more, and wraps onto deeper-indented lines.
    """
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if re.fullmatch(r"\s*-{10,}\s*", line))
    entries: dict[str, list[str]] = {}
    current = None
    for line in lines[start + 1 :]:
        if re.fullmatch(r"\s*-{10,}\s*", line) or not line.strip():
            current = None  # an underline, or the blank line that ends a section
        elif re.match(r"  \S", line):
            head, description = re.fullmatch(r"(\S.*?)(?:\s{2,}(.*))?", line.strip()).groups()
            current = head
            entries[current] = [description or ""]
        elif re.match(r"   ", line) and current is not None:
            entries[current].append(line.strip())
    described = {}
    for head, parts in entries.items():
        description = " ".join(p for p in parts if p)
        description = re.sub(r"\((default: [^)]*|required)\)\s*$", "", description).strip()
        described[head] = description
    return described


@pytest.mark.parametrize("sub", SUBCOMMANDS)
def test_help_describes_every_option(capsys, sub):
    entries = help_entries(help_text(capsys, sub))
    entries.pop("-h, --help")
    # Every field of the subcommand's dataclass is one entry (a bool is "--x, --no-x"): the parser saw them all.
    assert len(entries) == len(dataclasses.fields(SUBCOMMANDS[sub])), entries
    options = [head for head in entries if head.startswith("--")]
    assert options, entries
    for head, description in entries.items():
        assert len(description.split()) >= 2, f"acrl {sub} --help: {head!r} has no description ({description!r})"


def test_help_lists_choices_and_no_empty_default(capsys):
    text = help_text(capsys, "collect")
    assert "--kind KIND" in text and "--algo {ddpg,td3,dqn}" in text and "--format {hdf5,minari}" in text
    assert "--pruner {median,asha,none}" in help_text(capsys, "tune")
    for sub in SUBCOMMANDS:
        assert "(default: )" not in help_text(capsys, sub), sub  # an empty list option showed this


def test_readme_cli_block_is_the_synopsis():
    readme = (ROOT / "README.md").read_text()
    block = readme.split("<!-- cli-synopsis:start -->\n")[1].split("<!-- cli-synopsis:end -->")[0]
    assert block == f"```\n{synopsis()}\n```\n"


def test_synopsis_renders_each_option():
    lines = synopsis().splitlines()
    assert (
        "acrl resume RUN_DIR [--total-steps N] [--actors N] [--device DEVICE] [--precision fp32|bf16] [--no-progress]"
        in lines
    )
    assert (
        "acrl evaluate RUN_DIR [--checkpoint best|latest] [--episodes N] [--stochastic] [--seed N] [--device DEVICE]"
    ) in lines
    assert "acrl plot RUN_DIR [RUN_DIR ...] [--metric KEY ...] [--x steps|episodes|time] [--out FILE.png]" in lines
    text = " ".join(synopsis().split())
    for sub, cls in SUBCOMMANDS.items():  # every field of every command is in its paragraph
        paragraph = text.split(f"acrl {sub} ")[1].split(" acrl ")[0]
        for f in dataclasses.fields(cls):
            flag = f.name.replace("_", "-")
            assert (
                f"--{flag}" in paragraph
                or f"--no-{flag}" in paragraph
                or f.name in ("algo", "run_dir", "run_dirs", "name")
            ), (sub, f.name)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["train", "ppo", "--seed", "abc"], "--seed takes an integer, got 'abc'."),
        (["train", "ppo", "--video-freq", "1.5"], "--video-freq takes an integer, got '1.5'."),
        (["sweep", "ppo", "--seeds", "1", "x"], "--seeds takes integers, got '1' 'x'."),
        (["train", "ppo", "--bogus"], "unrecognized argument --bogus; `acrl train --help` lists the options."),
        (["record", "RUN", "--checkpoint", "foo"], "--checkpoint must be best or latest, got 'foo'."),
        (
            ["collect", "--kind", "concurrent", "--out", "d.h5", "--steps", "9"],
            "--kind must be final, imitation, imperfect, random, medium, medium-replay, expert or medium-expert, "
            "got 'concurrent'.",
        ),
        (["collect", "--out", "d.h5"], "acrl collect needs --kind; `acrl collect --help` describes it."),
        (["train"], "acrl train needs ALGO; `acrl train --help` describes it."),
        (
            ["trian", "ppo"],
            "unknown command 'trian' (did you mean train?); the commands are train, resume, evaluate, "
            "record, plot, collect, experiment, sweep, tune.",
        ),
    ],
)
def test_argument_errors_are_one_line(capsys, argv, message):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"acrl: error: {message}\n" and captured.out == ""


def test_version():
    out = run_cli("--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert (out.returncode, out.stdout, out.stderr) == (0, f"acrl {version}\n", "")


def test_train_help_lists_every_registered_algorithm(capsys):
    text = " ".join(help_text(capsys, "train").split())
    algo_help = text[text.index("Algorithm:") :]
    for name in ALGORITHMS:
        assert re.search(rf"\b{name}\b", algo_help), name


def test_handlers_cover_every_subcommand():
    assert set(HANDLERS) == set(COMMANDS.values())


@pytest.mark.parametrize("command", [Extrapolation, Concurrent, Discrete, D4rl])
def test_each_experiment_command_has_its_specs_settings_and_an_option_per_agent(command):
    """The command takes exactly the settings its spec resolves, and a --NAME-set for the behavioral agent and for
    each learner of its spec, so a learner added to a spec without its option fails here."""
    fields = {f.name for f in dataclasses.fields(command)}
    spec = command.spec
    sets = {name for name in fields if name.endswith("_set")}
    assert sets == {"behavioral_set", *(f"{learner.option}_set" for learner in spec.learners)}
    budgets = {"steps_behavioral", "updates", "dataset_size", "final_noise", "eval_freq", "eval_episodes"}
    budgets |= {"target_return", "expert_return"}
    assert fields & budgets == set(spec.settings)


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["experiment"],
            "acrl experiment needs one of extrapolation, concurrent, discrete, d4rl "
            "(`acrl experiment --help` describes them).",
        ),
        (
            ["experiment", "extrapolaton"],
            "unknown experiment 'extrapolaton' (did you mean extrapolation?); choose "
            "extrapolation, concurrent, discrete, d4rl.",
        ),
        (
            ["experiment", "discrete"],
            "acrl experiment discrete needs --env; `acrl experiment discrete --help` describes it.",
        ),
        (
            ["experiment", "discrete", "--env", "CartPole-v1", "--final-noise", "0.3"],
            "unrecognized arguments --final-noise 0.3; `acrl experiment discrete --help` lists the options.",
        ),
        (
            ["experiment", "extrapolation", "--env", "Pendulum-v1", "--learners", "discrete_bcq"],
            "--learners must be bcq, ddpg, bc, vae_bc or dqn, got 'discrete_bcq'.",
        ),
    ],
)
def test_an_experiment_option_of_another_experiment_is_refused_in_one_line(capsys, argv, message):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"acrl: error: {message}\n" and captured.out == ""


def test_without_tyros_private_hook_an_argument_error_is_still_one_line(capsys, monkeypatch):
    """The public fallback of `acrl.cli_parse.parse`: tyro's box is swallowed, the line names the command's help;
    --help still prints."""
    monkeypatch.setattr("acrl.cli_parse.parse_error_hook", lambda: None)
    assert main(["train", "ppo", "--seed", "abc"]) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        "acrl: error: cannot parse the arguments train ppo --seed abc; `acrl train --help` lists the options.\n"
    )
    assert captured.out == ""
    assert "--total-steps" in help_text(capsys, "train")


def test_one_line_warnings_and_restored(capsys):
    original = warnings.showwarning
    with one_line_warnings():
        warnings.warn("something odd\n  on two lines", stacklevel=1)
        warnings.warn("another thing", stacklevel=1)
    assert warnings.showwarning is original
    assert capsys.readouterr().err == "acrl: warning: something odd on two lines\nacrl: warning: another thing\n"
    assert main(["plot", "/nonexistent/acrl-run"]) == 2
    assert warnings.showwarning is original


def warning_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if re.search(r"warning:", line, re.IGNORECASE)]


def test_train_warning_is_one_line(tmp_path):
    out = run_cli(
        "train",
        "ddpg",
        "--env",
        "Pendulum-v1",
        "--total-steps",
        "50",
        "--set",
        "start_steps=100",
        "hidden_sizes=[8]",
        "eval_freq=0",
        "eval_episodes=1",
        "--run-dir",
        str(tmp_path / "D"),
        "--no-progress",
    )
    assert out.returncode == 0, out.stderr
    lines = warning_lines(out.stderr)
    assert len(lines) == 1, out.stderr  # before_learning runs once (in learn), and nothing hides a second
    assert lines[0].startswith("acrl: warning: total_steps 50 <= start_steps 100"), out.stderr
    assert ".py:" not in out.stderr and "UserWarning" not in out.stderr, out.stderr


@pytest.mark.slow  # the whole pipeline; the driver's one warning line, cheaply: test_bcq_experiments.py
@pytest.mark.parametrize(
    "name, extra", [("concurrent", []), ("extrapolation", ["--updates", "20", "--dataset-size", "50"])]
)
def test_experiment_warns_when_behavioral_budget_is_all_random_steps(tmp_path, name, extra):
    out = run_cli(
        "experiment",
        name,
        "--env",
        "Pendulum-v1",
        "--steps-behavioral",
        "50",
        *extra,
        "--eval-freq",
        "50",
        "--eval-episodes",
        "1",
        "--behavioral-set",
        "start_steps=100",
        "hidden_sizes=[8]",
        "--ddpg-set",
        "hidden_sizes=[8]",
        "--bcq-set",
        *TINY_BCQ,
        "--out",
        str(tmp_path / "E"),
        "--no-progress",
    )
    assert out.returncode == 0, out.stderr
    lines = warning_lines(out.stderr)
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("acrl: warning: total_steps 50 <= start_steps 100"), out.stderr
    assert ".py:" not in out.stderr and "UserWarning" not in out.stderr, out.stderr


@pytest.mark.parametrize("algo", ["bcq", "discrete_bcq"])
def test_offline_algorithm_without_env_or_dataset_asks_for_a_dataset(capsys, tmp_path, algo):
    assert main(["train", algo, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert f"acrl: error: {algo} learns from a fixed dataset: pass --dataset FILE" in err
    assert "--env ENV_ID is required" not in err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("algo, example", [("ppo", "CartPole-v1"), ("sac", "Pendulum-v1")])
def test_online_algorithm_without_env_asks_for_an_env_it_can_run(capsys, tmp_path, algo, example):
    assert main(["train", algo, "--run-dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err == f"acrl: error: --env ENV_ID is required for {algo} (for example --env {example}).\n"
    with pytest.raises(InputError) as error:  # from Python: the keyword, not the flag
        make_config(algo)
    assert str(error.value) == f"env_id is required for {algo} (for example env_id={example!r})."


def test_a_missing_dataset_file_is_named_before_the_action_space(capsys, tmp_path):
    missing = tmp_path / "missing.h5"
    assert main(["train", "bcq", "--dataset", str(missing), "--env", "CartPole-v1"]) == 2
    assert capsys.readouterr().err.startswith(f"acrl: error: dataset file '{missing}' does not exist")


def test_sweep_directory_names_every_environment():
    assert (
        SweepSpec("ppo", envs=["CartPole-v1", "acrl/AntDirectional-v5"])
        .default_dir()
        .name.startswith("sweep-ppo-CartPole-v1+acrl_AntDirectional-v5-")
    )


@pytest.mark.parametrize(
    "algo, env, other", [("bcq", "CartPole-v1", "discrete_bcq"), ("discrete_bcq", "Pendulum-v1", "bcq")]
)
def test_wrong_action_space_names_the_other_bcq(capsys, tmp_path, algo, env, other):
    h5py.File(tmp_path / "x.h5", "w").close()  # an HDF5 file: its datasets are read after the action space check
    assert (
        main(["train", algo, "--dataset", str(tmp_path / "x.h5"), "--env", env, "--run-dir", str(tmp_path / "run")])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("acrl: error: ") and err.count("\n") == 1, err
    assert "action space" in err and f"`acrl train {other}`" in err, err
    assert not (tmp_path / "run").exists()


def test_plot_missing_directory(capsys, tmp_path):
    assert main(["plot", str(tmp_path / "nope"), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"acrl: error: no run directory {tmp_path / 'nope'}"), err
    assert not (tmp_path / "c.png").exists()


def test_a_file_for_a_run_directory_is_refused_and_a_checkpoint_file_says_how_to_use_it(capsys, tmp_path):
    checkpoint = tmp_path / "agent.pt"
    checkpoint.write_bytes(b"")
    assert main(["evaluate", str(checkpoint)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"acrl: error: {checkpoint} is a file: give a run directory") and err.count("\n") == 1
    assert f"cp {checkpoint} RUN/checkpoints/latest.pt" in err, err
    metrics = tmp_path / "metrics.csv"
    metrics.write_text("step\n")
    assert main(["plot", str(metrics), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert err == f"acrl: error: {metrics} is a file: give a run directory (acrl train's).\n", err


def test_plot_directory_without_metrics(capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    assert main(["plot", str(tmp_path / "empty"), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'empty'} is not a run directory: it has no metrics.csv" in err, err
    # A folder of runs (such as runs/ or an experiment's output) names the run directories in it.
    (tmp_path / "runs" / "a").mkdir(parents=True)
    (tmp_path / "runs" / "a" / "metrics.csv").write_text("step,eval/return_mean\n")
    assert main(["plot", str(tmp_path / "runs"), "--out", str(tmp_path / "c.png")]) == 2
    err = capsys.readouterr().err
    assert "has no metrics.csv" in err and str(tmp_path / "runs" / "a") in err, err
    # A run directory that has not evaluated yet: the library's message.
    assert main(["plot", str(tmp_path / "runs" / "a"), "--out", str(tmp_path / "c.png")]) == 2
    assert "has finished a training episode or an evaluation yet" in capsys.readouterr().err


def test_plot_of_a_metric_no_run_has_names_those_they_have(capsys, tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.csv").write_text("step,train/entropy,eval/return_mean\n10,0.7,\n20,0.6,3.0\n")
    assert main(["plot", str(tmp_path / "run"), "--metric", "nonsense", "--out", str(tmp_path / "c.png")]) == 2
    assert capsys.readouterr().err == (
        "acrl: error: no run has logged 'nonsense'; the runs have: train/entropy, eval/return_mean.\n"
    )
    assert not (tmp_path / "c.png").exists()


def test_plot_says_where_it_writes(capsys, tmp_path, monkeypatch):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.csv").write_text("step,eval/return_mean\n10,1.0\n20,3.0\n")
    monkeypatch.chdir(tmp_path)  # the default --out is relative to the current directory
    assert main(["plot", "run"]) == 0
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "figure: learning_curves.png\n")
    assert (tmp_path / "learning_curves.png").stat().st_size > 0


def test_an_id_of_an_unregistered_namespace_suggests_no_other_ids(capsys):
    # "Atari/" stands for a namespace whose package is not imported (ALE/ without ale-py): before, the
    # closest ids of the whole registry came back (CarRacing-v3, Ant-v5, CartPole-v1).
    assert main(["train", "ppo", "--env", "Atari/Pong-v5"]) == 2
    err = capsys.readouterr().err
    assert "No Atari/ environment is registered" in err and "Did you mean" not in err, err
