"""acrl PPO and A3C against Stable-Baselines3 PPO and A2C on MinAtar, with the same network, settings and budget.

For each game (--games, default Breakout-v1 and SpaceInvaders-v1) and seed (--seeds, default 3), four
runs of --steps environment steps each:

- acrl PPO: the `MinAtar/<game>` PPO preset (CleanRL ppo_atari's settings: 8 envs x 128 steps,
  4 epochs, 4 minibatches, lr 2.5e-4 annealed over the budget, clip 0.1, entropy 0.01), the
  MinAtar CNN shared by the policy and value heads.
- SB3 PPO: the same hyperparameters from the same preset, 8 envs (`make_vec_env`, DummyVecEnv),
  `net_arch=[]` (the heads sit on the features, as in acrl), `share_features_extractor=True`.
- acrl A3C: its `MinAtar/<game>` preset with --a3c-workers (default 2) worker processes of one
  environment each, t_max the preset's n_steps.
- SB3 A2C: --a3c-workers environments in one process (DummyVecEnv), n_steps = A3C's t_max, and A3C's
  learning rate (and its annealing), gamma, GAE lambda, entropy and value coefficients, gradient-norm
  bound and optimizer (RMSprop alpha 0.99 or Adam, A3C's eps); advantages not normalized (`a2c_model`). A2C is A3C's
  synchronous variant: with as many envs as A3C has workers and the same t_max, both take one
  gradient step per t_max x workers steps (Mnih et al. 2016, Sec. 4; Wu et al. 2017's A2C).

The network, in all four: acrl's `CNNEncoder` with `CNNS["minatar"]` (Young and Tian 2019, Sec. 4:
16 3x3 stride-1 convolutions, ReLU, flatten, 128 units, ReLU), for SB3 as its features extractor
(`MinAtarCNN` below); the encoder casts the bool (10, 10, C) frames to float itself, so SB3 gets
the observations unchanged (SB3 does not take a bool Box for an image: it neither transposes nor
rescales it, and its `preprocess_obs` casts it to float). Init: SB3's `ortho_init` gives the
extractor orthogonal gain sqrt(2) and zero biases, the policy head gain 0.01 and the value head 1,
the same as acrl (CleanRL's ppo_atari); the parameter count is the same (132,308 on Breakout-v1).
Optimizer: both PPOs Adam eps 1e-5; SB3 A2C A3C's optimizer (its shared RMSprop or Adam).

Final return, the same measure for all four: the mean undiscounted return of --eval-episodes
(default 10) whole episodes of a deterministic (greedy) policy after the last update, on a separate
environment seeded seed + 10,000 (`acrl.core.evaluation.evaluate`). Per (game, algorithm), the IQM
and mean of the seeds' final returns with 95% stratified-bootstrap CIs (rliable, 2,000 resamples;
`acrl.sweep.results.interval_estimates`, as `acrl sweep` reports). With 3 seeds the IQM is the
middle seed's value weighted with the others by the 25% trimmed mean, and the CIs are wide.

Scale: the MinAtar paper (Young and Tian 2019, arXiv:1903.03176, Fig. 2) plots learning curves over
5M frames for DQN and actor-critic(lambda); its figures' numbers are not quoted here (none were
found in a source this script could cite), so the comparison is between the four rows only.

Budget (--steps, default 500,000): rates measured on the 2-core machine with one torch thread
(12,288-step runs on Breakout-v1, 2026-12-02, while other jobs shared the cores): acrl PPO 8,400
steps/s, SB3 PPO 6,300, SB3 A2C (2 envs, t_max 5) 1,350; acrl A3C with 2 workers not measured yet
(its MinAtar preset comes with A3C from frames), taken as 3,000 (about twice A2C, the goal). Per
(game, seed), in seconds per step: PPO 1/8,400 + SB3 PPO 1/6,300 + A2C 1/1,350 = 1.02e-3, halved
by running two at a time (--jobs 2, one core each) = 0.51e-3, plus A3C alone on both cores 1/3,000
= 0.33e-3: 0.84e-3 s per step, x 6 (games x seeds) x 500,000 steps = 2,520 s, about 42 minutes
plus the evaluations (10 short episodes per run). A3C never shares the cores: it runs after the
single-process runs. A slower A3C, or a busier machine, makes it longer: resume after a stop.

Resumable: each finished run writes --scratch/<game>-<algo>-<steps>-w<workers>-s<seed>.json and a rerun
skips it.

    python benchmarks/minatar_vs_sb3.py --out benchmarks/results/minatar_vs_sb3.json   # about 45 min
    python benchmarks/minatar_vs_sb3.py --steps 2048 --seeds 1 --eval-episodes 1       # a check

Writes --out (default benchmarks/results/tmp/minatar_vs_sb3.json) with `provenance()`, the
settings, every run and the statistics, and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import torch
from meta import RESULTS, scratch_path

from acrl.core.files import write_json_atomic
from acrl.core.provenance import load_average, provenance

ALGOS = ("acrl PPO", "SB3 PPO", "acrl A3C", "SB3 A2C")
EVAL_SEED_OFFSET = 10_000


def preset(algo: str, env_id: str) -> dict[str, Any]:
    """acrl's default preset values of `algo` ("ppo" or "a3c") for `env_id`.

    Raises:
        SystemExit: acrl has no such preset (A3C's MinAtar presets come with A3C from frames).
    """
    from acrl.core.config import preset_values

    try:
        values, _ = preset_values(algo, env_id, None)
    except Exception as error:  # InputError: no preset for this environment
        raise SystemExit(f"minatar_vs_sb3: acrl has no {algo} preset for {env_id} ({error})") from error
    if not values:
        raise SystemExit(
            f"minatar_vs_sb3: acrl has no {algo} preset for {env_id}: the MinAtar presets of A3C from frames are "
            "needed (or leave the A3C and A2C rows out: --algos 'acrl PPO' 'SB3 PPO')"
        )
    return dict(values)


def evaluate_final(predictor: Any, env_id: str, seed: int, episodes: int) -> dict[str, Any]:
    from acrl.core.evaluation import evaluate

    result = evaluate(predictor, env_id, episodes, deterministic=True, seed=seed + EVAL_SEED_OFFSET)
    return {"return_mean": float(result["return_mean"]), "returns": [float(r) for r in result["returns"]]}


def run_acrl(algo: str, env_id: str, seed: int, steps: int, a3c_workers: int) -> Any:
    """Train acrl PPO or A3C with its MinAtar preset for `steps` steps, evaluation off; returns the agent."""
    import acrl

    values = preset("ppo" if algo == "acrl PPO" else "a3c", env_id)
    values.update(seed=seed, total_steps=steps, eval_freq=0)
    if algo == "acrl PPO":
        return acrl.PPO(env_id, torch_threads=1, **values).learn(progress=False)
    if not hasattr(acrl, "A3C"):
        raise SystemExit("minatar_vs_sb3: acrl has no A3C")
    values.update(workers=a3c_workers, n_envs=1)
    return acrl.A3C(env_id, **values).learn(progress=False)


def minatar_cnn_class() -> type:
    """SB3's features extractor that is acrl's MinAtar CNN (`CNNEncoder(CNNS["minatar"])`)."""
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

    from acrl.parts.encoders import CNNS, CNNEncoder
    from acrl.parts.observations import image_layout

    class MinAtarCNN(BaseFeaturesExtractor):
        """obs (B, 10, 10, C) float (SB3's cast of the bool frames) -> (B, 128) float32: acrl's encoder."""

        def __init__(self, observation_space: Any):
            channels, height, width, channels_last = image_layout(observation_space, "last")
            encoder = CNNEncoder(CNNS["minatar"], channels, height, width, channels_last, 1.0)
            super().__init__(observation_space, encoder.features_dim)
            self.encoder = encoder

        def forward(self, observations: torch.Tensor) -> torch.Tensor:
            return self.encoder(observations)

    return MinAtarCNN


def run_sb3(algo: str, env_id: str, seed: int, steps: int, a3c_workers: int) -> Any:
    """Train SB3 PPO (acrl's PPO preset) or A2C (acrl's A3C preset, a3c_workers envs) for `steps` steps."""
    from stable_baselines3.common.env_util import make_vec_env

    import acrl  # noqa: F401  (registers the MinAtar ids)

    policy_kwargs: dict[str, Any] = {
        "features_extractor_class": minatar_cnn_class(),
        "net_arch": [],
        "share_features_extractor": True,
        "ortho_init": True,
        "normalize_images": False,
    }
    if algo == "SB3 PPO":
        venv = make_vec_env(env_id, n_envs=preset("ppo", env_id)["n_envs"], seed=seed)
        model = ppo_model(venv, preset("ppo", env_id), seed, policy_kwargs)
    else:
        model = a2c_model(env_id, make_vec_env(env_id, n_envs=a3c_workers, seed=seed), seed, policy_kwargs, steps)
    return model.learn(total_timesteps=steps)


def ppo_model(venv: Any, v: dict[str, Any], seed: int, policy_kwargs: dict[str, Any]) -> Any:
    """SB3 PPO on `venv` with acrl PPO's preset values `v` (n_steps, batch, epochs, gamma, GAE lambda, clip, the
    coefficients, gradient norm, the learning rate linearly annealed when `anneal_lr`) and Adam's eps 1e-5 as acrl's."""
    from stable_baselines3 import PPO

    lr = v["learning_rate"]
    return PPO(
        "CnnPolicy",
        venv,
        learning_rate=(lambda remaining: lr * remaining) if v.get("anneal_lr") else lr,
        n_steps=v["n_steps"],
        batch_size=v["batch_size"],
        n_epochs=v["n_epochs"],
        gamma=v["gamma"],
        gae_lambda=v["gae_lambda"],
        clip_range=v["clip_range"],
        ent_coef=v["ent_coef"],
        vf_coef=v["vf_coef"],
        max_grad_norm=v["max_grad_norm"],
        policy_kwargs={**policy_kwargs, "optimizer_kwargs": {"eps": 1e-5}},
        seed=seed,
        device="cpu",
        verbose=0,
    )


def a2c_model(env_id: str, venv: Any, seed: int, policy_kwargs: dict[str, Any], steps: int, n_steps: int = 0) -> Any:
    """SB3 A2C on `venv` with acrl A3C's settings for `env_id` (its preset over A3CConfig's defaults): t_max
    (or `n_steps`), learning rate (annealed linearly to 0 over `steps` when A3C anneals it), gamma, GAE
    lambda, entropy and value coefficients, gradient-norm bound, and the optimizer (RMSprop with alpha
    0.99, or Adam) with A3C's eps; advantages not normalized, as A3C's."""
    from stable_baselines3 import A2C

    from acrl import A3CConfig
    from acrl.core.config import update_config

    cfg = update_config(A3CConfig(), preset("a3c", env_id), origin=f"a3c preset for {env_id}")
    if cfg.optimizer == "rmsprop" and cfg.rmsprop_alpha != 0.99:
        raise SystemExit(f"SB3 A2C's RMSprop has alpha 0.99; acrl's A3C preset for {env_id} has {cfg.rmsprop_alpha}")
    lr = cfg.learning_rate
    rmsprop = cfg.optimizer == "rmsprop"
    optimizer = {} if rmsprop else {"optimizer_class": torch.optim.Adam, "optimizer_kwargs": {"eps": cfg.optimizer_eps}}
    return A2C(
        "CnnPolicy",
        venv,
        learning_rate=(lambda remaining: lr * remaining) if cfg.anneal_lr else lr,
        n_steps=n_steps or cfg.n_steps,
        gamma=cfg.gamma,
        gae_lambda=cfg.gae_lambda,
        ent_coef=cfg.ent_coef,
        vf_coef=cfg.vf_coef,
        max_grad_norm=cfg.max_grad_norm if cfg.max_grad_norm is not None else float("inf"),
        use_rms_prop=rmsprop,
        rms_prop_eps=cfg.optimizer_eps,
        normalize_advantage=False,
        policy_kwargs={**policy_kwargs, **optimizer},
        seed=seed,
        device="cpu",
        verbose=0,
    )


class SB3Predictor:
    """An SB3 model behind acrl's `predict(obs, deterministic) -> action` (int, Discrete actions)."""

    def __init__(self, model: Any):
        self.model = model

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> int:
        return int(self.model.predict(obs, deterministic=deterministic)[0])


def one_run(algo: str, game: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train `algo` on MinAtar/`game` for args.steps steps, evaluate it, and write its scratch JSON."""
    torch.set_num_threads(1)
    env_id = f"MinAtar/{game}"
    started = time.perf_counter()
    if algo.startswith("acrl"):
        agent = run_acrl(algo, env_id, seed, args.steps, args.a3c_workers)
        steps, predictor = int(agent.num_steps), agent
    else:
        model = run_sb3(algo, env_id, seed, args.steps, args.a3c_workers)
        steps, predictor = int(model.num_timesteps), SB3Predictor(model)
    seconds = time.perf_counter() - started
    result = {
        "algo": algo,
        "game": game,
        "seed": seed,
        "steps": steps,
        "train_seconds": seconds,
        "steps_per_s": steps / seconds,
        **evaluate_final(predictor, env_id, seed, args.eval_episodes),
    }
    path = run_path(args, algo, game, seed)
    write_json_atomic(path, result)
    print(f"  {game} {algo} seed {seed}: return {result['return_mean']:.2f} ({seconds:.0f} s)", flush=True)
    return result


def run_path(args: argparse.Namespace, algo: str, game: str, seed: int) -> Path:
    """The scratch JSON of one run: its game, algorithm, budget, workers and seed in the name (a changed
    setting reruns)."""
    return args.scratch / f"{game}-{algo.replace(' ', '_')}-{args.steps}-w{args.a3c_workers}-s{seed}.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", nargs="+", default=["Breakout-v1", "SpaceInvaders-v1"])
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0, 1, ...")
    parser.add_argument("--steps", type=int, default=500_000, help="environment steps per run")
    parser.add_argument("--a3c-workers", type=int, default=2, help="A3C's workers = SB3 A2C's envs")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=2, help="single-process runs at once (one torch thread each)")
    parser.add_argument(
        "--scratch", type=Path, default=RESULTS / "tmp" / "minatar_vs_sb3", help="one JSON per finished run"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=scratch_path("minatar_vs_sb3"),
        help="result file (default: the scratch folder benchmarks/results/tmp/)",
    )
    args = parser.parse_args()
    from acrl.sweep.results import BOOTSTRAP_REPS, interval_estimates

    load_before = load_average()
    todo = [
        (algo, game, seed)
        for seed in range(args.seeds)
        for game in args.games
        for algo in args.algos
        if not run_path(args, algo, game, seed).exists()
    ]
    print(f"{len(todo)} runs to do ({args.steps:,} steps each)", flush=True)
    single = [t for t in todo if t[0] != "acrl A3C"]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:  # the single-process runs, args.jobs at a time
        for future in [pool.submit(one_run, *t, args) for t in single]:
            future.result()
    for t in todo:  # A3C's workers take the cores: one run at a time, alone
        if t[0] == "acrl A3C":
            one_run(*t, args)

    runs = [
        json.loads(run_path(args, algo, game, seed).read_text())
        for game in args.games
        for algo in args.algos
        for seed in range(args.seeds)
    ]
    stats: dict[str, dict[str, Any]] = {}
    for game in args.games:
        scores = {
            algo: np.array([r["return_mean"] for r in runs if r["game"] == game and r["algo"] == algo])
            for algo in args.algos
        }
        stats[game] = interval_estimates(scores)
    lines = [
        f"MinAtar, {args.steps:,} steps, final deterministic evaluation ({args.eval_episodes} episodes), "
        f"{args.seeds} seeds: IQM [95% CI] and mean",
        "",
        "| game | algorithm | IQM | 95% CI | mean | per seed |",
        "|---|---|---:|---|---:|---|",
    ]
    for game, by_algo in stats.items():
        for algo, s in by_algo.items():
            seeds = ", ".join(f"{r['return_mean']:.1f}" for r in runs if r["game"] == game and r["algo"] == algo)
            lines.append(
                f"| {game} | {algo} | {s['iqm']:.2f} | [{s['iqm_ci'][0]:.2f}, {s['iqm_ci'][1]:.2f}] | "
                f"{s['mean']:.2f} | {seeds} |"
            )
    print("\n".join(lines))
    settings = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    summary = {
        "benchmark": "minatar_vs_sb3",
        "meta": provenance(load_before, ["stable-baselines3", "minatar", "rliable"]),
        "settings": {**settings, "bootstrap_reps": BOOTSTRAP_REPS, "eval_seed_offset": EVAL_SEED_OFFSET},
        "runs": runs,
        "stats": stats,
    }
    write_json_atomic(args.out, summary)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
