"""acrl PPO with an LSTM against SB3-contrib's RecurrentPPO, side by side, with the same settings.

On a POPGym task (default popgym-PositionOnlyCartPoleEasy-v0, acrl's `popgym` extra; SB3-contrib is in
the `bench` extra), for each of --seeds seeds and each library: train --steps environment steps with
evaluation off (acrl: eval_freq 0, no run directory; SB3: no callbacks), timing `learn`, then evaluate
--eval-episodes deterministic episodes on a separate environment seeded seed + 10_000 through
`acrl.core.evaluation.evaluate`, which carries each library's LSTM state within an episode and starts
it fresh at each one (`EpisodeActor`). Runs alternate acrl, SB3 seed by seed.

Same settings: acrl's preset for the task (acrl/presets/ppo.yaml, from rl-baselines3-zoo's
hyperparams/ppo_lstm.yml); RecurrentPPO gets n_envs, n_steps, batch_size, n_epochs, gamma, gae_lambda,
learning_rate (a linear schedule to 0 when the preset anneals it), clip_range (constant), ent_coef,
vf_coef, max_grad_norm, lstm_hidden_size, the 64-64 tanh layers (net_arch for pi and vf), orthogonal
init, the initial log-std, and VecNormalize (clip 10, the preset's gamma) where the preset normalises.
One LSTM shared by actor and critic in both (SB3-contrib: shared_lstm=True, enable_critic_lstm=False).
What differs by design: acrl runs the MLP before the LSTM (encoder -> LSTM -> heads), SB3-contrib
after it (LSTM -> MLP -> heads); acrl's minibatches are fixed-length chunks of each environment's
rollout (`seq_len`, default n_steps), SB3-contrib's are cut at episode starts and padded. One torch
thread for both, on the CPU.

    python benchmarks/recurrent_ppo.py --out benchmarks/results/recurrent_ppo_position_only_cartpole.json
    python benchmarks/recurrent_ppo.py --env popgym-RepeatPreviousEasy-v0 \
        --out benchmarks/results/recurrent_ppo_repeat_previous.json
    python benchmarks/recurrent_ppo.py --env CartPole-v1 --lstm-hidden-size 256 --libs acrl acrl_ff \
        --out benchmarks/results/recurrent_ppo_cartpole.json     # fully observed: the LSTM still solves it
    python benchmarks/recurrent_ppo.py --seeds 1 --steps 2048 --eval-episodes 2 --libs acrl sb3   # a smoke test

Prints a markdown table and writes --out (default benchmarks/results/tmp/recurrent_ppo.json; a
committed result needs `--out benchmarks/results/recurrent_ppo.json`): `provenance()`, the arguments,
and per library and seed the steps, training seconds, steps/s and the evaluation's mean return, with
their means over the seeds, and the return's IQM with its 95% bootstrap CI (rliable, as `acrl sweep`).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from meta import scratch_path

from acrl import PPO, PPOConfig
from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.core.config import preset_values, update_config
from acrl.core.envs import env_factory
from acrl.core.evaluation import evaluate
from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance
from acrl.sweep.results import interval_estimates


def preset_config(env_id: str, steps: int, lstm_hidden_size: int | None) -> PPOConfig:
    """acrl's default PPO preset for `env_id` with `steps` steps, evaluation off, one torch thread, and
    `lstm_hidden_size` cells where given (else the preset's, which must have an LSTM)."""
    values, _ = preset_values("ppo", env_id, None)
    values.update(total_steps=steps, eval_freq=0, torch_threads=1)
    if lstm_hidden_size is not None:
        values["lstm_hidden_size"] = lstm_hidden_size
    cfg = update_config(PPOConfig(), values, origin=f"ppo preset for {env_id}")
    if not cfg.lstm_hidden_size:
        raise SystemExit(f"the ppo preset for {env_id} has no LSTM: pick a POPGym id or give --lstm-hidden-size.")
    return cfg


def train_acrl(env_id: str, cfg: PPOConfig, seed: int, episodes: int, feed_forward: bool = False) -> dict[str, float]:
    """acrl's PPO with `cfg`; with `feed_forward`, the same settings without the LSTM (what memory adds)."""
    changes = {"seed": seed, "lstm_hidden_size": 0} if feed_forward else {"seed": seed}
    agent = PPO(env_id, config=update_config(cfg, changes, "benchmark"))
    started = time.perf_counter()
    agent.learn(progress=False)
    seconds = time.perf_counter() - started
    result = evaluate(agent, env_id, episodes, seed=seed + EVAL_SEED_OFFSET)
    return {"steps": agent.num_steps, "seconds": seconds, "steps_per_s": agent.num_steps / seconds,
            "return_mean": result["return_mean"]}  # fmt: skip


class RecurrentSB3Predictor:
    """A RecurrentPPO (and its frozen VecNormalize) behind acrl's recurrent `predict(obs, state,
    episode_start, deterministic=...) -> (action, state)`, so `evaluate` carries its LSTM state."""

    stateful = True

    def __init__(self, model: Any, vecnorm: Any = None):
        self.model, self.vecnorm = model, vecnorm
        self.discrete = isinstance(model.action_space, gym.spaces.Discrete)

    def predict(self, obs: np.ndarray, state: Any = None, episode_start: Any = None, deterministic: bool = True):
        if self.vecnorm is not None:
            obs = self.vecnorm.normalize_obs(obs)  # statistics are not updated here
        starts = np.array([state is None if episode_start is None else bool(episode_start)])
        action, state = self.model.predict(obs, state=state, episode_start=starts, deterministic=deterministic)
        return (int(action) if self.discrete else action), state


def sb3_model(env_id: str, cfg: PPOConfig, seed: int) -> tuple[Any, Any]:
    """RecurrentPPO with acrl's preset settings (see the module docstring): (model, VecNormalize or None)."""
    from ppo_vs_sb3 import sb3_ppo_settings, with_vec_normalize
    from sb3_contrib import RecurrentPPO
    from stable_baselines3.common.env_util import make_vec_env

    venv = make_vec_env(env_factory(env_id)[0], n_envs=cfg.n_envs, seed=seed)  # acrl's env: one-hot cards
    venv, vecnorm = with_vec_normalize(venv, cfg)
    settings = sb3_ppo_settings(cfg)
    settings["policy_kwargs"].update(lstm_hidden_size=cfg.lstm_hidden_size, shared_lstm=True, enable_critic_lstm=False)
    model = RecurrentPPO("MlpLstmPolicy", venv, seed=seed, device="cpu", verbose=0, **settings)
    return model, vecnorm


def train_sb3(env_id: str, cfg: PPOConfig, seed: int, episodes: int) -> dict[str, float]:
    model, vecnorm = sb3_model(env_id, cfg, seed)
    started = time.perf_counter()
    model.learn(total_timesteps=cfg.total_steps)
    seconds = time.perf_counter() - started
    if vecnorm is not None:
        vecnorm.training = False
    result = evaluate(RecurrentSB3Predictor(model, vecnorm), env_id, episodes, seed=seed + EVAL_SEED_OFFSET)
    return {"steps": model.num_timesteps, "seconds": seconds, "steps_per_s": model.num_timesteps / seconds,
            "return_mean": result["return_mean"]}  # fmt: skip


TRAINERS = {"acrl": train_acrl, "acrl_ff": functools.partial(train_acrl, feed_forward=True), "sb3": train_sb3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="popgym-PositionOnlyCartPoleEasy-v0")
    parser.add_argument("--steps", type=int, default=None, help="training steps per run (default: the preset's)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument(
        "--libs",
        nargs="+",
        choices=list(TRAINERS),
        default=list(TRAINERS),
        help="acrl: PPO-LSTM; acrl_ff: the same without the LSTM; sb3: SB3-contrib's RecurrentPPO",
    )
    parser.add_argument(
        "--lstm-hidden-size",
        type=int,
        default=None,
        help="LSTM cells (default: the preset's; needed for a task whose preset has none)",
    )
    parser.add_argument("--out", default=str(scratch_path("recurrent_ppo")))
    args = parser.parse_args()
    torch.set_num_threads(1)
    steps = args.steps or preset_values("ppo", args.env, None)[0]["total_steps"]
    cfg = preset_config(args.env, steps, args.lstm_hidden_size)
    load_before = load_average()
    runs: dict[str, list[dict[str, float]]] = {lib: [] for lib in args.libs}
    for seed in range(args.seeds):
        for lib in args.libs:
            run = TRAINERS[lib](args.env, cfg, seed, args.eval_episodes)
            runs[lib].append({"seed": seed, **run})
            print(f"{lib} seed {seed}: {run['steps_per_s']:.0f} steps/s, return {run['return_mean']:.3f}", flush=True)
    estimates = interval_estimates({lib: [r["return_mean"] for r in rows] for lib, rows in runs.items()})
    summary = {
        lib: {
            **{key: statistics.fmean(r[key] for r in rows) for key in ("steps_per_s", "return_mean", "seconds")},
            "return_iqm": estimates[lib]["iqm"],
            "return_iqm_ci": estimates[lib]["iqm_ci"],
        }
        for lib, rows in runs.items()
    }
    print(f"\n{args.env}, {cfg.total_steps} steps, {args.seeds} seeds (means)\n")
    print("| library | steps/s | return mean | return IQM [95% CI] | training s |\n|---|---|---|---|---|")
    for lib, s in summary.items():
        ci = s["return_iqm_ci"]
        print(
            f"| {lib} | {s['steps_per_s']:.0f} | {s['return_mean']:.3f} | {s['return_iqm']:.3f} "
            f"[{ci[0]:.3f}, {ci[1]:.3f}] | {s['seconds']:.1f} |"
        )
    result = {
        "meta": provenance(load_before, ("stable-baselines3", "sb3-contrib", "popgym")),
        "args": {**vars(args), "steps": cfg.total_steps},
        "config": cfg.to_dict(),
        "runs": runs,
        "summary": summary,
    }
    write_json_atomic(args.out, result)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
