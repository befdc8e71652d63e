"""Rerun the results that are plain `acrl train` runs over several seeds, and write their JSON.

These committed results are ordinary training runs, one per seed, read back from their run
directories; this script runs them again (through the `acrl` CLI, one subprocess per run) and writes
the file in the committed schema. A run directory that holds a finished run (its eval.json) is read
as it is, and one that holds an unfinished run is resumed (`acrl resume`), so an interrupted call
picks up where it stopped:

- `sac_hopper`: `acrl train sac --env Hopper-v5 --seed S` for seeds 0-2 (the preset: 300k steps),
  then `acrl evaluate RUN_DIR --episodes 10 --seed 123` on each best.pt. About 85 min per run.
- `dqn_cartpole`: `acrl train dqn --env CartPole-v1 --seed S` for seeds 0-2 (the preset:
  rl-baselines3-zoo's settings and budget, 50k steps, 10 deterministic episodes every 5k steps),
  then best.pt on 10 fresh episodes as sac_hopper's: the zoo keeps its best evaluation's model
  too (its EvalCallback). About 2 min per run.
- `ppo_ant_1m`: `acrl train ppo --env Ant-v5 --seed S` for seeds 0-2 (the preset: 1M steps).
  About 15 min per run on one core.
- `a3c_pendulum_1m`: `acrl train a3c --env Pendulum-v1 --workers 2 --seed S` for the preset (seeds
  0-9) and the variants its README table compares, one run at a time (about 80 s each). The
  2026-12-01 round ran on an older preset and cannot be rerun: it is carried over from the committed
  file.
- `ppo_pong`: `acrl train ppo --env ALE/Pong-v5` (the `ALE/*-v5` preset) for seed 0 within 10M
  frames (2.5M agent steps at frame skip 4; the learning rate annealed over them), on 2 torch
  threads, 5 whole games every 250k steps; then best.pt on 10 fresh games. About 85 min on 2 cores.
- `ppo_pong_no_sticky`: the same run on PongNoFrameskip-v4, the same game and preprocessing without
  sticky actions (repeat_action_probability 0: CleanRL's ppo_atari setting), to tell what sticky
  actions cost from a fault in the learner. Same budget and time.
- `ppo_pong_10m`, `ppo_breakout_10m`: `acrl train ppo --env PongNoFrameskip-v4` (BreakoutNoFrameskip-v4) with the
  preset's 10M agent steps (40M frames), CleanRL ppo_atari's budget and setting (no sticky actions), in the default
  precision (bf16 on a CPU with bfloat16 instructions), on 2 torch threads, 5 whole games every 250k steps; then
  best.pt on 10 fresh games. Issue #48's goals: >= +18 on Pong and >= 300 on Breakout within 10M steps (CleanRL:
  20.36 and 414.7). About 6-7 hours each on the 2-core Xeon, over several sessions (`acrl resume`). The Pong run met
  its goal at 2.0M steps and was stopped there (best.pt +20.8; from 857k in fp32, `acrl resume RUN --precision fp32`,
  on an AMD EPYC without bfloat16 instructions: a run resumed on such a CPU needs it, and on a bf16 CPU again
  `--precision bf16`, since the checkpoint keeps the precision it last ran in). The Breakout run trained in fp32
  to 4.0M on an AMD EPYC without bfloat16 (family 25, about 250 agent steps/s with its evaluations), then in bf16
  (`acrl resume RUN --precision bf16`) on one with AVX512-BF16 (family 26, about 650-750); each result's sessions
  say which steps ran where.
- `a3c_pong`: `acrl train a3c --env ALE/Pong-v5 --preset original --workers 2` (the A3C paper's
  agent) for seed 0, 4M agent steps (about 2 hours: 600-750 steps/s on the 2-core AMD EPYC with
  its evaluations, about 750 on the Xeon), 5 whole games every 250k steps; then best.pt on 10
  fresh games. The committed run was stopped once at 3.27M and resumed by the same command.
- `a3c_pong_reference`: `acrl train a3c --env PongNoFrameskip-v4 --preset reference --workers 2` (the references'
  learning settings: an LSTM of 256, Adam 1e-4, t_max 20; docs/a3c-pong.md) for seeds 0-2, 4M agent steps (about
  2 hours each at 600 steps/s), 5 whole games every 250k steps; then best.pt on 10 fresh games. The issue's goal:
  >= +18 within 2 hours and 4M steps. Each run's sessions (steps, commit, CPU, load) come from its sessions.json.
- `a3c_pong_reference_sticky`: the same on ALE/Pong-v5 (ALE v5's sticky actions, 0.25), seed 0.
- `impala_pong`: `acrl train impala --env PongNoFrameskip-v4 --actors 2` (the Atari preset: the paper's shallow
  agent with an LSTM and the A3C references' Adam learner, 2 actors of 1 env, an update per unroll, 4M steps) for
  seed 0, evaluated as the A3C runs. The issue's goal (#49): >= +18 with A3C's Pong budget, 2 hours of wall clock
  and 4M agent steps. About 440 steps/s on the 2-core Xeon with its evaluations: 4M steps take 2.5 hours; the
  committed run was stopped at 3.18M, past the goal's 2 hours (its best.pt is from 1.7 hours).
- `a3c_lstm_popgym`: `acrl train a3c --env popgym-PositionOnlyCartPoleEasy-v0 --workers 2` with the
  `default` preset (256 LSTM cells) and the `feed_forward` one (the same without the LSTM), seeds
  0-2 each (150k steps, a few minutes a run); the statistic is the run's last evaluation (10
  deterministic episodes at 150k steps), the IQM with its 95% CI over seeds (rliable, as `acrl sweep`).
- `a3c_lstm_minatar`: the same comparison from frames, `acrl train a3c --env MinAtar/Breakout-v1 --workers 2
  --total-steps 300000`, the MinAtar preset with and without `--set lstm_hidden_size=256` (the A3C paper's
  LSTM agent: 256 cells after the CNN, the same settings), seeds 0-2 (4-10 min a run, the test suite sharing the
  machine).
- `dqn_minatar_v0_1m`: `acrl train dqn --env MinAtar/Breakout-v0 --total-steps 1000000 --set double_q=false` (the
  MinAtar preset with the paper's target, the max of Q' rather than the preset's Double DQN: the MinAtar paper's
  DQN, on the paper's game: v0, all 6 actions; latest.pt keeps the replay buffer, 40 MB, so
  that a run resumed in a later session goes on exactly) for seeds 0-2, against the paper's DQN at the same
  frames. Its measure is the one the paper plots, the mean return of the last 100 training episodes
  (epsilon-greedy, epsilon 0.1 by then): `rollout/ep_return_mean`. The paper's curve (Young and Tian 2019,
  Fig. 2; the MinAtar repository's img/learning_curves.gif, 30 runs) has no table: `MINATAR_PAPER_DQN` holds it
  read off the figure's pixels. The runs also evaluate greedily (10 episodes every 100k steps) and best.pt on
  10 fresh episodes. About 1.8 hours for the three with `--jobs 3` on the 2 cores.
- `dqn_minatar_1m`: the same on Breakout-v1 (its 3 actions: no-op, left, right), the game acrl's other MinAtar
  results use. Not compared with the paper: under epsilon 0.1 a random action moves the paddle 2 times in 3
  here and 1 in 3 in v0 (left and right of 6), so the same greedy policy scores less in training.
- `impala_cartpole`: `acrl train impala --env CartPole-v1 --actors 2` (the preset: 500k steps, 10 deterministic
  episodes every 10,240 steps) for seeds 0-2, then best.pt on 10 fresh episodes as dqn_cartpole's. The issue's
  goal (#49): >= 475 within 500k steps on every seed. The 2 actors take the 2 cores' Ray CPUs, the learner
  shares them: one run at a time (no --jobs).
- `impala_minatar`: acrl IMPALA against acrl A3C on MinAtar/Breakout-v1 at 1M steps, each with its MinAtar
  preset (`acrl train impala ... --actors 2`, `acrl train a3c ... --workers 2`, both evaluating 10 deterministic
  episodes every 100k steps), seeds 0-2 each. No committed A3C result is at 1M (a3c_lstm_minatar.json stops at
  300k, minatar_vs_sb3.json at 200k), so it trains both. The statistic is a3c_lstm_minatar's: the last
  evaluation of each run, the IQM with its 95% CI over seeds; the goal (#49): IMPALA's IQM at or above A3C's.

    python benchmarks/seed_runs.py ppo_pong --out benchmarks/results/ppo_pong.json
    python benchmarks/seed_runs.py ppo_pong_no_sticky --out benchmarks/results/ppo_pong_no_sticky.json
    python benchmarks/seed_runs.py ppo_pong_10m --out benchmarks/results/ppo_pong_10m.json
    python benchmarks/seed_runs.py ppo_breakout_10m --out benchmarks/results/ppo_breakout_10m.json
    python benchmarks/seed_runs.py a3c_pong --out benchmarks/results/a3c_pong.json
    python benchmarks/seed_runs.py a3c_pong_reference --out benchmarks/results/a3c_pong_reference.json
    python benchmarks/seed_runs.py a3c_pong_reference_sticky --out benchmarks/results/a3c_pong_reference_sticky.json
    python benchmarks/seed_runs.py impala_pong --out benchmarks/results/impala_pong.json
    python benchmarks/seed_runs.py sac_hopper --jobs 3 --out benchmarks/results/sac_hopper.json
    python benchmarks/seed_runs.py dqn_cartpole --out benchmarks/results/dqn_cartpole.json
    python benchmarks/seed_runs.py ppo_ant_1m --jobs 2 --out benchmarks/results/ppo_ant_1m_rerun.json
    python benchmarks/seed_runs.py a3c_pendulum_1m --out benchmarks/results/a3c_pendulum_1m.json
    python benchmarks/seed_runs.py a3c_lstm_popgym --out benchmarks/results/a3c_lstm_popgym.json
    python benchmarks/seed_runs.py a3c_lstm_minatar --out benchmarks/results/a3c_lstm_minatar.json
    python benchmarks/seed_runs.py dqn_minatar_1m --jobs 3 --out benchmarks/results/dqn_minatar_1m.json
    python benchmarks/seed_runs.py dqn_minatar_v0_1m --jobs 3 --out benchmarks/results/dqn_minatar_v0_1m.json
    python benchmarks/seed_runs.py impala_cartpole --out benchmarks/results/impala_cartpole.json
    python benchmarks/seed_runs.py impala_minatar --out benchmarks/results/impala_minatar.json
    python benchmarks/seed_runs.py sac_hopper --total-steps 2000 --seeds 0     # a check in seconds

A run too long for one session is read as far as it got with --as-is (its JSON says `finished`: false) and
continued later by the same command without it. So that another machine can continue it, its latest.pt is
committed as benchmarks/checkpoints/NAME_RUN.pt (RUN: the run directory's name, e.g. s0): where the run
directory has no checkpoint, the same command goes on from that file (the checkpoint carries the run's curve,
training episodes and sessions, which `acrl resume` writes back; best.pt stays behind: the next evaluation
above the run's best writes a new one).

Without --out the result goes to benchmarks/results/tmp/NAME.json. Run directories go under
--runs (default runs/seed-runs/NAME); give a fresh --runs to repeat a result from scratch.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from meta import RESULTS, ROOT, scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.plotting import read_curve
from acrl.core.provenance import load_average, provenance, sessions
from acrl.sweep.results import interval_estimates

CHECKPOINTS = ROOT / "benchmarks" / "checkpoints"
"""The committed latest.pt of the runs longer than a session, NAME_RUN.pt (`train`)."""

# the settings of a3c_pendulum_1m's current round: its run directories' names, flags on top of the preset, seeds
A3C_PENDULUM = {
    "n_envs=2, n_steps=10 (the preset now)": ("preset", [], range(10)),
    "the preset of 6cb8bff (1 env per worker, n_steps 20)": (
        "envs1-t20",
        ["--n-envs", "1", "--set", "n_steps=20"],
        range(5),
    ),
    "n_envs=4, n_steps=5": ("envs4-t5", ["--n-envs", "4", "--set", "n_steps=5"], range(5)),
    "n_envs=4, n_steps=20": ("envs4-t20", ["--n-envs", "4", "--set", "n_steps=20"], range(2)),
    "ent_coef=0.001 (seed 1 only)": ("ent0.001", ["--n-envs", "1", "--set", "n_steps=20", "ent_coef=0.001"], [1]),
    "learning_rate=0.002 (seed 1 only)": (
        "lr0.002",
        ["--n-envs", "1", "--set", "n_steps=20", "learning_rate=0.002"],
        [1],
    ),
}
A3C_LSTM_POPGYM = {
    "LSTM (the default preset: 256 cells)": ("lstm", [], range(3)),
    "feed-forward (the feed_forward preset)": ("feed-forward", ["--preset", "feed_forward"], range(3)),
}
A3C_LSTM_MINATAR = {
    "LSTM (the preset with 256 LSTM cells)": ("lstm", ["--set", "lstm_hidden_size=256"], range(3)),
    "feed-forward (the MinAtar preset)": ("feed-forward", [], range(3)),
}
IMPALA_MINATAR = {
    "acrl IMPALA, 2 actors (the MinAtar preset)": ("impala", [], range(3)),
    "acrl A3C, 2 workers (the MinAtar preset)": ("a3c", [], range(3)),
}
ATARI_EVAL = ["eval_freq=250000", "eval_episodes=5", "checkpoint_freq=100000"]  # --set values of the Pong runs
TRAIN = {
    "sac_hopper": ["sac", "--env", "Hopper-v5"],
    "dqn_cartpole": ["dqn", "--env", "CartPole-v1"],
    "ppo_ant_1m": ["ppo", "--env", "Ant-v5"],
    "a3c_pendulum_1m": ["a3c", "--env", "Pendulum-v1", "--workers", "2"],
    "a3c_lstm_popgym": ["a3c", "--env", "popgym-PositionOnlyCartPoleEasy-v0", "--workers", "2"],
    "a3c_lstm_minatar": ["a3c", "--env", "MinAtar/Breakout-v1", "--workers", "2", "--total-steps", "300000"],
    "impala_cartpole": ["impala", "--env", "CartPole-v1", "--actors", "2"],
    "impala_minatar": ["impala", "--env", "MinAtar/Breakout-v1", "--actors", "2", "--total-steps", "1000000"],
    "dqn_minatar_1m": [
        *("dqn", "--env", "MinAtar/Breakout-v1", "--total-steps", "1000000"),
        *("--set", "save_replay_buffer=true"),  # a run resumed in a later session goes on with its replay
    ],
    "dqn_minatar_v0_1m": [
        *("dqn", "--env", "MinAtar/Breakout-v0", "--total-steps", "1000000"),
        *("--set", "save_replay_buffer=true", "double_q=false"),  # the paper's target, the max of Q'
    ],
    "ppo_pong": [
        "ppo",
        "--env",
        "ALE/Pong-v5",
        "--total-steps",
        "2500000",
        "--set",
        "torch_threads=2",
        *ATARI_EVAL,
    ],
    "ppo_pong_no_sticky": [
        *("ppo", "--env", "PongNoFrameskip-v4", "--total-steps", "2500000"),
        *("--set", "torch_threads=2", *ATARI_EVAL),
    ],
    "ppo_pong_10m": ["ppo", "--env", "PongNoFrameskip-v4", "--set", "torch_threads=2", *ATARI_EVAL],
    "ppo_breakout_10m": ["ppo", "--env", "BreakoutNoFrameskip-v4", "--set", "torch_threads=2", *ATARI_EVAL],
    "a3c_pong": [
        *("a3c", "--env", "ALE/Pong-v5", "--preset", "original", "--workers", "2", "--total-steps", "4000000"),
        *("--set", *ATARI_EVAL),
    ],
    "a3c_pong_reference": [
        *("a3c", "--env", "PongNoFrameskip-v4", "--preset", "reference", "--workers", "2"),
        *("--set", *ATARI_EVAL),
    ],
    "a3c_pong_reference_sticky": [
        *("a3c", "--env", "ALE/Pong-v5", "--preset", "reference", "--workers", "2"),
        *("--set", *ATARI_EVAL),
    ],
    "impala_pong": [*("impala", "--env", "PongNoFrameskip-v4", "--actors", "2"), *("--set", *ATARI_EVAL)],
}
SEEDS = {
    "ppo_pong": range(1),
    "ppo_pong_no_sticky": range(1),
    "ppo_pong_10m": range(1),
    "ppo_breakout_10m": range(1),
    "a3c_pong": range(1),
    "a3c_pong_reference": range(3),
    "a3c_pong_reference_sticky": range(1),
    "impala_pong": range(1),
}
"""Seeds where not 0-2: one Pong run is what fits in a session here."""
SETTING_TRAIN = {
    "acrl A3C, 2 workers (the MinAtar preset)": [
        *("a3c", "--env", "MinAtar/Breakout-v1", "--workers", "2", "--total-steps", "1000000"),
    ],
}
"""The `acrl train` arguments of a setting that trains another algorithm than its result's (`TRAIN`'s): IMPALA's
peer in impala_minatar."""


def acrl(*args: str) -> str:
    """Run the acrl CLI in a subprocess (its stderr passes through); its stdout. Raises CalledProcessError."""
    return subprocess.run(
        [sys.executable, "-m", "acrl", *args], check=True, stdout=subprocess.PIPE, text=True, cwd=ROOT
    ).stdout


def train(
    command: list[str], run_dir: Path, seed: int, flags: list[str], total_steps: int | None, committed: Path
) -> Path:
    """`acrl train COMMAND` (a `TRAIN` or `SETTING_TRAIN` entry) for one seed into `run_dir` (`acrl resume` where
    it holds an unfinished run, nothing where it holds a finished one); returns `run_dir`. Where `run_dir` has no
    checkpoint and `committed` (the run's latest.pt in benchmarks/checkpoints) exists, the run goes on from it: its
    latest.pt carries its curve and sessions (`acrl resume` restores them)."""
    if (run_dir / "eval.json").is_file():
        return run_dir
    latest = run_dir / "checkpoints" / "latest.pt"
    if not latest.is_file() and committed.is_file():  # a machine laid anew
        latest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(committed, latest)
    if latest.is_file():
        acrl("resume", str(run_dir), "--no-progress")
        return run_dir
    budget = ["--total-steps", str(total_steps)] if total_steps else []
    acrl("train", *command, "--seed", str(seed), "--run-dir", str(run_dir), "--no-progress", *budget, *flags)
    return run_dir


def curve(run_dir: Path) -> list[list[float]]:
    """[[step, eval/return_mean], ...] of a run's evaluations, in order."""
    steps, values = read_curve(run_dir)
    return [[int(s), float(v)] for s, v in zip(steps, values, strict=True)]


def best_checkpoints(run_dirs: dict[int, Path]) -> dict[str, Any]:
    """Per seed: the best and the last evaluation of the run, and best.pt on 10 fresh episodes (seed 123);
    the means over seeds of the fresh and the last evaluations."""
    runs = []
    for seed, run_dir in run_dirs.items():
        evals = curve(run_dir)
        best_step, best = max(evals, key=lambda row: row[1])
        fresh = json.loads(acrl("evaluate", str(run_dir), "--episodes", "10", "--seed", "123"))
        runs.append(
            {
                "seed": seed,
                "best_eval": best,
                "best_step": best_step,
                "final_eval": evals[-1][1],
                "best_checkpoint_fresh_10_episodes": fresh["return_mean"],
                "fresh_std": fresh["return_std"],
                "eval_every": evals[1][0] - evals[0][0],
            }
        )
    return {
        "evaluation": f"deterministic, 10 episodes every {runs[0]['eval_every']:,} steps (seed + 10000); fresh: "
        "best.pt on 10 episodes seeded 123",
        "runs": runs,
        "mean_best_checkpoint_fresh": statistics.mean(r["best_checkpoint_fresh_10_episodes"] for r in runs),
        "mean_final_eval": statistics.mean(r["final_eval"] for r in runs),
    }


def ppo_ant_1m(run_dirs: dict[int, Path]) -> dict[str, Any]:
    seeds = []
    for seed, run_dir in run_dirs.items():
        evals = curve(run_dir)
        steps, stds = read_curve(run_dir, "eval/return_std")
        seeds.append(
            {
                "seed": seed,
                "final_step": evals[-1][0],
                "final_return_mean": evals[-1][1],
                "final_return_std": float(stds[-1]),
                "eval_curve": evals,
            }
        )
    return {
        "statistic": "final deterministic evaluation at 1M steps (10 episodes, the run loop's last evaluation row)",
        "mean_final_return": statistics.mean(s["final_return_mean"] for s in seeds),
        "seeds": seeds,
    }


def atari_run(run_dir: Path) -> dict[str, Any]:
    """One Atari run (Pong, Breakout): its evaluations (5 whole games each), training game scores
    (rollout/ep_return_mean, the mean of the last 100 whole games), best.pt on 10 fresh deterministic games (seed
    123), the wall clock of the run and up to its best checkpoint (`time/elapsed_s`: its sessions summed), and its
    sessions (sessions.json)."""
    evals = curve(run_dir)
    best_step, best = max(evals, key=lambda row: row[1])
    steps, train_scores = read_curve(run_dir, "rollout/ep_return_mean")
    every = max(1, len(steps) // 100)
    fresh = json.loads(acrl("evaluate", str(run_dir), "--episodes", "10", "--seed", "123"))
    elapsed_steps, elapsed = read_curve(run_dir, "time/elapsed_s")
    return {
        "finished": (run_dir / "eval.json").is_file(),
        "training_hours": round(float(elapsed[-1]) / 3600, 2),
        "hours_to_best": round(float(np.interp(best_step, elapsed_steps, elapsed)) / 3600, 2),
        "sessions": sessions(run_dir, "train"),
        "best_eval": best,
        "best_step": best_step,
        "final_eval": evals[-1][1],
        "best_checkpoint_fresh_10_games": fresh["return_mean"],
        "fresh_returns": fresh["returns"],
        "eval_curve": evals,
        "training_curve": [[int(s), round(float(v), 2)] for s, v in zip(steps[::every], train_scores[::every])],
    }


MINATAR_PAPER_DQN = {
    "source": "Young and Tian 2019 (MinAtar), Fig. 2, Breakout, DQN: the MinAtar repository's img/learning_curves.gif "
    "(kenjyoung/MinAtar at 4241f24), the blue curve's pixels (median row per column, within "
    "0.05M frames of each point) mapped through the axis ticks (0-15 returns, 0-5M frames); about +-0.3 from "
    "the line's width. The mean over 30 runs of the last 100 training episodes' returns, Breakout-v0's 6 actions.",
    "frames": [200_000, 500_000, 1_000_000, 2_000_000, 5_000_000],
    "return": [6.0, 8.3, 9.2, 9.7, 10.0],
}
"""The MinAtar paper's DQN on Breakout at the frames it is compared at (no table in the paper: read off its figure)."""


def dqn_minatar_1m(run_dirs: dict[int, Path], paper_game: bool) -> dict[str, Any]:
    """Per seed: the mean return of the last 100 training episodes at the run's end (the MinAtar paper's
    measure) and its curve every 10k steps; with `best_checkpoints`' greedy evaluations. Over seeds: the
    IQM of the training measure with its 95% CI and the mean; for the paper's game (`paper_game`: Breakout-v0,
    its 6 actions), the paper's DQN at the fewest frames a seed reached, interpolated between the points read
    off its figure (None outside them)."""
    seeds = []
    for seed, run_dir in run_dirs.items():
        steps, returns = read_curve(run_dir, "rollout/ep_return_mean")
        every = [i for i, step in enumerate(steps) if step % 10_000 == 0]
        seeds.append(
            {
                "seed": seed,
                "finished": (run_dir / "eval.json").is_file(),
                "last_step": int(steps[-1]),
                "training_return_last_100": round(float(returns[-1]), 2),
                "training_curve": [[int(steps[i]), round(float(returns[i]), 2)] for i in every],
            }
        )
    frames = min(s["last_step"] for s in seeds)
    paper = MINATAR_PAPER_DQN
    read = paper_game and paper["frames"][0] <= frames <= paper["frames"][-1]  # between the figure's points
    there = np.interp(frames, paper["frames"], paper["return"]).item() if read else None
    return {
        "statistic": "rollout/ep_return_mean at the run's end: the mean return of the last 100 training episodes, "
        "mean and IQM [95% CI] over seeds (rliable)",
        "training_return": interval_estimates({"dqn": [s["training_return_last_100"] for s in seeds]})["dqn"],
        "at_frames": frames,
        **({"paper_dqn": {**paper, "there": there}} if paper_game else {}),
        "seeds": seeds,
        **best_checkpoints(run_dirs),
    }


def pendulum_run(seed: int, run_dir: Path) -> dict[str, Any]:
    evals = curve(run_dir)
    reached = next((step for step, value in evals if value >= -200), None)
    return {
        "seed": seed,
        "final_return_mean": round(evals[-1][1], 1),
        "best_return_mean": round(max(v for _, v in evals), 1),
        "first_step_at_or_above_minus_200": reached,
        "eval_curve": [[s, round(v, 1)] for s, v in evals],
    }


def last_evaluations(name: str, run_dirs: dict[str, dict[int, Path]]) -> dict[str, Any]:
    """Per setting of `name` (`SETTINGS`), each seed's last evaluation (return mean over its episodes) and the
    IQM with its 95% bootstrap CI over the seeds."""
    finals = {key: {seed: curve(run_dir)[-1] for seed, run_dir in dirs.items()} for key, dirs in run_dirs.items()}
    estimates = interval_estimates({key: [value for _, value in rows.values()] for key, rows in finals.items()})
    return {
        "statistic": "the last evaluation of each run (deterministic episodes, seed + 10000), IQM [95% CI] "
        "over seeds (rliable)",
        "settings": {
            key: {
                "flags": SETTINGS[name][key][1],
                "runs": [{"seed": seed, "step": step, "final_return_mean": v} for seed, (step, v) in rows.items()],
                **estimates[key],
            }
            for key, rows in finals.items()
        },
    }


SETTINGS = {
    "a3c_pendulum_1m": A3C_PENDULUM,
    "a3c_lstm_popgym": A3C_LSTM_POPGYM,
    "a3c_lstm_minatar": A3C_LSTM_MINATAR,
    "impala_minatar": IMPALA_MINATAR,
}
"""The scripts whose runs come in named settings (run-directory slug, flags on top of the preset, seeds)."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", choices=list(TRAIN))
    parser.add_argument("--seeds", type=int, nargs="+", help="override the seeds (every setting)")
    parser.add_argument("--total-steps", type=int, help="override the preset's budget (a quick check)")
    parser.add_argument("--jobs", type=int, default=1, help="runs at a time")
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="train nothing: read the run directories as they are, an unfinished run up to its last evaluation "
        "(a long run cut by the end of a session; `acrl resume` continues it later)",
    )
    parser.add_argument("--runs", type=Path, help="root of the run directories (default runs/seed-runs/NAME)")
    parser.add_argument("--out", type=Path, help="result file (default benchmarks/results/tmp/NAME.json)")
    args = parser.parse_args(argv)
    runs_root = args.runs or ROOT / "runs" / "seed-runs" / args.name
    out = args.out or scratch_path(args.name)
    load_before = load_average()

    settings = SETTINGS.get(args.name, {"": ("", [], SEEDS.get(args.name, range(3)))})
    jobs = [
        (key, seed, runs_root / (f"{slug}-s{seed}" if slug else f"s{seed}"), flags)
        for key, (slug, flags, seeds) in settings.items()
        for seed in (args.seeds or seeds)
    ]

    def command(key: str) -> list[str]:
        """The `acrl train` arguments of setting `key`."""
        return SETTING_TRAIN.get(key, TRAIN[args.name])

    with ThreadPoolExecutor(args.jobs) as pool:
        if args.as_is:
            done = [run_dir for _, _, run_dir, _ in jobs]
        else:
            done = list(
                pool.map(
                    lambda job: train(
                        command(job[0]),
                        job[2],
                        job[1],
                        job[3],
                        args.total_steps,
                        CHECKPOINTS / f"{args.name}_{job[2].name}.pt",
                    ),
                    jobs,
                )
            )
    run_dirs: dict[str, dict[int, Path]] = {}
    for (key, seed, _, _), run_dir in zip(jobs, done, strict=True):
        run_dirs.setdefault(key, {})[seed] = run_dir

    commands = [
        f"acrl train {' '.join(command(key))} --seed S {' '.join(flags)}".strip()
        for key, (_, flags, _) in settings.items()
    ]
    meta = provenance(load_before)
    if args.name in ("sac_hopper", "dqn_cartpole", "impala_cartpole"):
        budget = {"sac_hopper": 300_000, "dqn_cartpole": 50_000, "impala_cartpole": 500_000}[args.name]
        result = {
            "meta": meta,
            "commands": commands,
            "total_steps": args.total_steps or budget,
            **best_checkpoints(run_dirs[""]),
        }
    elif args.name in SEEDS:
        result = {
            "benchmark": f"{args.name}: {' '.join(TRAIN[args.name])}",
            "meta": meta,
            "commands": commands,
            "evaluation": "deterministic whole games (raw scores): 5 every 250k agent steps, then best.pt on 10",
            "runs": {str(seed): atari_run(run_dir) for seed, run_dir in run_dirs[""].items()},
        }
    elif args.name in ("a3c_lstm_popgym", "a3c_lstm_minatar"):
        result = {
            "benchmark": f"A3C with and without an LSTM on {TRAIN[args.name][2]}, 2 workers",
            "meta": meta,
            "commands": commands,
            **last_evaluations(args.name, run_dirs),
        }
    elif args.name == "impala_minatar":
        result = {
            "benchmark": "acrl IMPALA (2 actors) against acrl A3C (2 workers) on MinAtar/Breakout-v1, 1M steps",
            "meta": meta,
            "commands": commands,
            "total_steps": args.total_steps or 1_000_000,
            **last_evaluations(args.name, run_dirs),
        }
    elif args.name in ("dqn_minatar_1m", "dqn_minatar_v0_1m"):
        game = TRAIN[args.name][2]
        result = {
            "benchmark": f"DQN {game}, 1M steps, the MinAtar preset (the MinAtar paper's DQN)",
            "meta": meta,
            "commands": commands,
            **dqn_minatar_1m(run_dirs[""], paper_game=game == "MinAtar/Breakout-v0"),
        }
    elif args.name == "ppo_ant_1m":
        result = {
            "benchmark": "PPO Ant-v5, 1M steps, the Ant preset",
            "meta": meta,
            "commands": commands,
            **ppo_ant_1m(run_dirs[""]),
        }
    else:
        committed = json.loads((RESULTS / "a3c_pendulum_1m.json").read_text())
        current = {
            "date": meta["date"][:10],
            "commit_of_the_learning_code": (meta["commit"] or "")[:7],
            "command": "acrl train a3c --env Pendulum-v1 --workers 2 --seed S [FLAGS] (FLAGS per setting)",
            "machine": f"{meta['cores']} cores, {meta['cpu']}",
            "settings": {},
        }
        for key, (_, flags, _) in A3C_PENDULUM.items():
            rows = [pendulum_run(seed, run_dir) for seed, run_dir in run_dirs[key].items()]
            earlier = committed["rounds"][-1]["settings"].get(key, {})  # its note records older runs
            current["settings"][key] = {
                "flags": flags,
                "note": earlier.get("note", ""),
                "runs": rows,
                "mean_final": f"{statistics.mean(r['final_return_mean'] for r in rows):.1f}",
            }
        result = {
            **{k: v for k, v in committed.items() if k not in ("rounds", "command", "conditions")},
            "meta": meta,
            "rounds": [committed["rounds"][0], current],
        }
    meta["load_average_after"] = load_average()  # after the best.pt evaluations too, which the result holds
    write_json_atomic(out, result)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
