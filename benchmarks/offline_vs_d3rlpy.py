"""acrl's TD3+BC, IQL, CQL and BC against d3rlpy 2.8's on the same D4RL-style datasets (issue #50 item 4):
D4RL's normalised score after the same number of updates with the same hyperparameters, and updates/s on
one thread.

acrl's side is a D4RL table, the summary (d4rl.json) of `acrl experiment d4rl` or of its --merge: each run's
final normalised score and its training updates/s (`acrl.offline.jobs.training_rate`: evaluations left out),
its runs two at a time on the 2 cores, one thread each. d3rlpy's side is run here on the same datasets (given as
--datasets: each must be the table's dataset of its kind, whose episode return the table records, or it is
refused), seeds, updates and evaluation episodes, `--jobs` runs at a time (default 2, one thread each: the
table's conditions). So acrl's numbers are the ones a user of `acrl experiment d4rl` gets, and each algorithm
trains once per library. The datasets are read by d3rlpy from the same arrays (`bcq_vs_d3rlpy.to_npz`,
`d3rlpy_dataset`). d3rlpy pins another gymnasium, so it runs in its own venv, benchmarks/.venv-d3rlpy, in a
subprocess (`bcq_vs_d3rlpy.ensure_venv`, `run_d3rlpy`: the one place that sets it up and runs it). Its
training time excludes evaluation; its evaluation is the table's episodes on an environment seeded at seed +
10,000, as acrl's evaluations are. The normalised score is `acrl.offline.d4rl.normalized_score`: D4RL's
references on its tasks, else the dataset's random return and `--expert-return`.

The settings are those of the table's runs (`acrl.algos.make_config`: the env's preset, the papers' D4RL
settings, with the table's --ALGO-set overrides), and d3rlpy's config is built from them (`d3rlpy_settings`). Where
d3rlpy 2.8's defaults differ, the script sets its fields to acrl's:

- TD3PlusBCConfig: actor/critic_learning_rate 3e-4, batch_size 256, gamma 0.99, tau 0.005,
  target_smoothing_sigma 0.2 (acrl's policy_noise), target_smoothing_clip 0.5 (noise_clip), alpha 2.5,
  update_actor_interval 2 (policy_delay) and 256-256 encoders are d3rlpy's defaults too; d3rlpy has no
  observation scaler by default, acrl always normalises states by the dataset's mean and std (the paper's),
  so the script sets observation_scaler=StandardObservationScaler().
- IQLConfig: learning rates 3e-4, batch 256, expectile 0.7, weight_temp 3.0 (acrl's beta), max_weight 100
  and 256-256 encoders are d3rlpy's defaults; d3rlpy has no step-size schedule and no reward scaling by
  default, acrl decays the policy's step size to 0 on a cosine over the run (actor_lr_decay_steps) and
  scales rewards so the dataset's returns span return_range 1000 (the authors' locomotion settings), so the
  script gives the actor AdamFactory(lr_scheduler_factory=CosineAnnealingLRFactory(T_max=updates)) and sets
  reward_scaler=ReturnBasedRewardScaler(multiplier=1000).
- CQLConfig: d3rlpy tunes the penalty's weight by default (alpha_learning_rate 1e-4, alpha_threshold 10),
  acrl's default is the fixed weight 5.0 (the authors' min_q_weight), so the script sets
  conservative_weight 5.0, initial_alpha 1.0 and alpha_learning_rate 0 (a `target_action_gap` in acrl's
  config maps to alpha_threshold with alpha_learning_rate = acrl's learning_rate); d3rlpy's encoders are
  256-256, acrl's (the paper's) 256-256-256, set on both; actor 1e-4, critic 3e-4, temperature 1e-4 (acrl
  tunes it at actor_learning_rate), n_action_samples 10 and the deterministic backup (soft_q_backup False)
  agree.
- BCConfig: learning_rate 1e-3, batch 100 and the deterministic policy agree; d3rlpy's encoder is 256-256,
  acrl's 400-300 (the BCQ paper's BC), set on both.
- All: MinMaxActionScaler to the environment's bounds (both act in [-1, 1] scaled to them).

What stays different: d3rlpy drops the last transition of each episode cut by a timeout (it has no next row)
where acrl keeps it with its stored next observation; IQL's policy mean is squashed by tanh in acrl (the
authors') and not in d3rlpy; the networks' initialisations are each library's own.

    # acrl's side: the D4RL table, in parts on the committed datasets, then merged (docs/offline.md)
    acrl experiment d4rl --env Hopper-v5 --datasets-from benchmarks/data/d4rl_hopper_v5 --updates 10000 \\
        --seeds 0 --out runs/d4rl-s0        # then --seeds 1, --seeds 2, and --merge into runs/d4rl
    # d3rlpy's side against it, on an idle machine (the same command again resumes it)
    python benchmarks/offline_vs_d3rlpy.py --table runs/d4rl/d4rl.json \\
        --datasets benchmarks/data/d4rl_hopper_v5/data-medium/medium.h5 \\
        benchmarks/data/d4rl_hopper_v5/data-medium/medium-replay.h5 --out benchmarks/results/offline_vs_d3rlpy.json
    # a smoke test of d3rlpy's side (200 updates, the table's first seed, one episode)
    python benchmarks/offline_vs_d3rlpy.py --table runs/d4rl/d4rl.json --datasets FILE.h5 --quick

Results: --out (default benchmarks/results/tmp/offline_vs_d3rlpy.json), rewritten after every d3rlpy run, with
`provenance()` (command, commit, date, CPU, load average before and after, versions) as `meta`. The same command
with other --algos adds their runs to an existing --out of the same table (a comparison run by parts, e.g. CQL's
hours in a session of their own): `parts` keeps each invocation's provenance, and each row its `part` (an index
into it);
benchmarks/sections/offline.py renders it in docs/benchmarks.md beside CORL's published D4RL scores.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from bcq_vs_d3rlpy import SCRATCH, action_scaler, d3rlpy_dataset, d3rlpy_fit, ensure_venv, run_d3rlpy, to_npz
from meta import scratch_path

ALGOS = ("td3_bc", "iql", "cql", "bc")
"""The algorithms compared, acrl's registry names."""

CORL = {
    "hopper-medium-v2": {"bc": 53.5, "td3_bc": 60.4, "cql": 59.1, "iql": 67.5},
    "hopper-medium-replay-v2": {"bc": 29.8, "td3_bc": 64.4, "cql": 95.1, "iql": 97.4},
    "locomotion average": {"bc": 50.4, "td3_bc": 76.5, "cql": 78.3, "iql": 81.6},
}
"""CORL's published D4RL normalised scores (Tarasov et al. 2023, "CORL: Research-oriented Deep Offline
Reinforcement Learning Library", the last checkpoint's, over D4RL's own datasets): the range ours sit in."""


# ------------------------------------------------------------------------------------ d3rlpy side
# Runs under benchmarks/.venv-d3rlpy/bin/python: imports only d3rlpy, torch, numpy, gymnasium.


def d3rlpy_worker(spec: dict) -> dict:
    """Train d3rlpy's spec["algo"] with spec["settings"] (`d3rlpy_settings`) on spec["npz"] for spec["updates"]
    updates, then evaluate (`bcq_vs_d3rlpy.d3rlpy_fit`); returns its result dict."""
    import d3rlpy
    import torch
    from d3rlpy.models import VectorEncoderFactory
    from d3rlpy.optimizers import AdamFactory, CosineAnnealingLRFactory
    from d3rlpy.preprocessing import ReturnBasedRewardScaler, StandardObservationScaler

    torch.set_num_threads(spec["threads"])
    d3rlpy.seed(spec["seed"])
    dataset = d3rlpy_dataset(spec["npz"])
    fields = dict(spec["settings"])
    for key in [key for key in fields if key.endswith("_encoder_factory") or key == "encoder_factory"]:
        fields[key] = VectorEncoderFactory(fields[key])
    if "observation_scaler" in fields:
        fields["observation_scaler"] = StandardObservationScaler()
    if "reward_scaler" in fields:
        fields["reward_scaler"] = ReturnBasedRewardScaler(multiplier=fields["reward_scaler"])
    if "actor_cosine_steps" in fields:
        schedule = CosineAnnealingLRFactory(T_max=fields.pop("actor_cosine_steps"))
        fields["actor_optim_factory"] = AdamFactory(lr_scheduler_factory=schedule)
    configs = {
        "td3_bc": d3rlpy.algos.TD3PlusBCConfig,
        "iql": d3rlpy.algos.IQLConfig,
        "cql": d3rlpy.algos.CQLConfig,
        "bc": d3rlpy.algos.BCConfig,
    }
    algo = configs[spec["algo"]](action_scaler=action_scaler(spec["env_id"]), **fields).create(device="cpu:0")
    algo.build_with_dataset(dataset)
    return d3rlpy_fit(algo, dataset, spec)


# ------------------------------------------------------------------------------------ acrl side


def acrl_config(algo: str, env_id: str, h5: Path, seed: int, updates: int, overrides: dict):
    """acrl's validated config of `algo` on `h5` as a D4RL table's run had it: the env's preset with the table's
    `overrides` of `algo`, `updates` updates, `seed`."""
    from acrl.algos import make_config

    _, config = make_config(
        algo, env_id, None, None, "--set", dataset=str(h5), seed=seed, total_steps=updates, **overrides
    )
    return config


def d3rlpy_settings(algo: str, config) -> dict:
    """d3rlpy 2.8's config fields for acrl's `config` of `algo` (see the module docstring): plain values, the
    encoders as their hidden sizes, the scalers and the actor's schedule as markers the worker builds."""
    c = config
    hidden = list(c.hidden_sizes)
    if algo == "td3_bc":
        return {
            "actor_learning_rate": c.learning_rate,
            "critic_learning_rate": c.learning_rate,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "target_smoothing_sigma": c.policy_noise,
            "target_smoothing_clip": c.noise_clip,
            "alpha": c.alpha,
            "update_actor_interval": c.policy_delay,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
            "observation_scaler": "standard",
        }
    if algo == "iql":
        settings = {
            "actor_learning_rate": c.learning_rate,
            "critic_learning_rate": c.learning_rate,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "expectile": c.expectile,
            "weight_temp": c.beta,
            "max_weight": c.max_weight,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
            "value_encoder_factory": hidden,
            "actor_cosine_steps": c.actor_lr_decay_steps or c.total_steps,
        }
        return settings | ({} if c.return_range is None else {"reward_scaler": c.return_range})
    if algo == "cql":
        lagrangian = c.target_action_gap is not None
        return {
            "actor_learning_rate": c.actor_learning_rate,
            "critic_learning_rate": c.learning_rate,
            "temp_learning_rate": 0.0 if c.ent_coef is not None else c.actor_learning_rate,
            "initial_temperature": c.ent_coef if c.ent_coef is not None else c.init_ent_coef,
            "alpha_learning_rate": c.learning_rate if lagrangian else 0.0,
            "initial_alpha": 1.0,
            **({"alpha_threshold": c.target_action_gap} if lagrangian else {}),
            "conservative_weight": c.cql_alpha,
            "n_action_samples": c.n_action_samples,
            "soft_q_backup": False,
            "batch_size": c.batch_size,
            "gamma": c.gamma,
            "tau": c.tau,
            "actor_encoder_factory": hidden,
            "critic_encoder_factory": hidden,
        }
    return {
        "learning_rate": c.learning_rate,
        "batch_size": c.batch_size,
        "policy_type": "deterministic",
        "encoder_factory": hidden,
    }


def score(return_mean: float, env_id: str, attrs: dict, expert_return: float | None) -> float | None:
    """D4RL's normalised score of a return (`normalized_score`), None without references."""
    from acrl.core.errors import InputError
    from acrl.offline.d4rl import normalized_score

    try:
        return normalized_score(return_mean, env_id, attrs.get("random_return"), expert_return)
    except InputError:
        return None


def table_datasets(table: dict, datasets: list[Path]) -> dict[str, Path]:
    """{kind: dataset} of `datasets` (HDF5 files of the table's kinds, by their `kind` attribute), each checked to
    be the table's own: its complete episodes' mean return equals the one the table records for its kind (to 1e-6,
    the summary's rounding). Raises SystemExit naming a dataset of no kind of the table's, or of other data."""
    from acrl.offline.jobs import mean_episode_return
    from acrl.parts.datasets import dataset_attrs, load_dataset

    found = {}
    for h5 in datasets:
        kind = dataset_attrs(h5).get("kind")
        if kind not in table["kinds"]:
            raise SystemExit(f"offline_vs_d3rlpy: {h5} is a {kind} dataset; the table's kinds are {table['kinds']}.")
        recorded = table["results"][kind]["behavioral"][0]["data_episode_return"]
        ours = mean_episode_return(load_dataset(h5))
        if ours is None or abs(ours - recorded) > 1e-6 * max(1.0, abs(recorded)):
            raise SystemExit(
                f"offline_vs_d3rlpy: {h5}'s episodes return {ours} on average, the table's {kind} dataset {recorded}: "
                "d3rlpy must learn from the data acrl learnt from."
            )
        found[kind] = h5
    return found


def run_budget(table: dict, quick: bool) -> tuple[list[int], int, int]:
    """d3rlpy's seeds, updates and evaluation episodes: the table's, or for a smoke test (`quick`) its first seed,
    200 updates and one episode."""
    return (table["seeds"][:1], 200, 1) if quick else (table["seeds"], table["updates"], table["eval_episodes"])


def d3rlpy_rows(
    python: Path,
    table: dict,
    datasets: dict[str, Path],
    args: argparse.Namespace,
    rows: list[dict],
    save: Callable[[list[dict]], None],
) -> list[dict]:
    """d3rlpy's run of each of args.algos on each dataset for each seed of the table, beside the table's acrl run:
    `run_budget`, args.jobs at a time, a whole seed's runs first. Runs already in `rows` (an interrupted
    comparison's) are kept; `save(rows)` after each new one. Each dataset is written once as the .npz d3rlpy reads,
    before any run starts (runs of one dataset then read one finished file)."""
    from acrl.parts.datasets import dataset_attrs

    env_id = table["env_id"]
    seeds, updates, episodes = run_budget(table, args.quick)
    npzs = {kind: SCRATCH / f"{h5.stem}.npz" for kind, h5 in datasets.items()}
    for kind, npz in npzs.items():
        to_npz(datasets[kind], npz)

    def row(kind: str, algo: str, seed: int) -> dict:
        h5, npz, ours = datasets[kind], npzs[kind], table["results"][kind][algo][table["seeds"].index(seed)]
        attrs = dataset_attrs(h5)
        config = acrl_config(algo, env_id, h5, seed, updates, table["overrides"].get(f"{algo}_overrides", {}))
        settings = d3rlpy_settings(algo, config)
        spec = {"algo": algo, "env_id": env_id, "npz": str(npz), "seed": seed, "updates": updates}
        spec |= {"threads": 1, "eval_episodes": episodes, "eval_seed": seed + 10_000, "settings": settings}
        d3 = run_d3rlpy(python, spec, __file__)
        d3["score"] = score(d3["return_mean"], env_id, attrs, table.get("expert_return"))
        acrl = {"score": ours["score"], "return_mean": ours["final"], "updates_per_s": ours["updates_per_s"]}
        print(
            f"{kind} {algo} seed {seed}: score acrl {acrl['score']:.1f}, d3rlpy {d3['score']}; updates/s acrl "
            f"{acrl['updates_per_s']:.1f}, d3rlpy {d3['updates_per_s']:.1f}",
            file=sys.stderr,
        )
        return {"dataset": str(h5), "kind": kind, "algo": algo, "seed": seed, "acrl": acrl, "d3rlpy": d3} | {
            "acrl_run_dir": ours["run_dir"],
            "d3rlpy_settings": settings,
        }

    done = {(r["kind"], r["algo"], r["seed"]) for r in rows}
    todo = [(k, a, s) for s in seeds for k in datasets for a in args.algos if (k, a, s) not in done]
    rows = list(rows)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(row, *key) for key in todo]):
            rows.append(future.result())
            save(rows)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command line (see the module docstring); returns the exit code (1 when d3rlpy cannot be set up)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--table", type=Path, help="acrl's side: an `acrl experiment d4rl` summary (d4rl.json)")
    parser.add_argument("--datasets", nargs="+", type=Path, help="the table's datasets (HDF5), one per kind")
    parser.add_argument("--algos", nargs="+", default=list(ALGOS), choices=ALGOS)
    parser.add_argument("--jobs", type=int, default=2, help="d3rlpy runs at a time, one thread each")
    parser.add_argument("--quick", action="store_true", help="smoke test: 200 updates, one seed, 1 episode")
    parser.add_argument("--out", type=Path, default=scratch_path("offline_vs_d3rlpy"))
    parser.add_argument("--d3rlpy-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.d3rlpy_worker:
        print(json.dumps(d3rlpy_worker(json.loads(args.d3rlpy_worker))))
        return 0
    if not args.table or not args.datasets:
        parser.error("--table D4RL.json and --datasets FILE.h5 ... are required")
    table = json.loads(args.table.read_text())
    lacking = [a for a in args.algos if a not in table["results"][table["kinds"][0]]]
    if lacking:
        parser.error(f"the table has no runs of {', '.join(lacking)}: choose --algos among its learners")
    datasets = table_datasets(table, args.datasets)

    from acrl.core.files import write_json_atomic
    from acrl.core.provenance import load_average, provenance

    load_before = load_average()
    try:
        python = ensure_venv()
    except RuntimeError as exc:
        print(f"offline_vs_d3rlpy: cannot set up d3rlpy: {exc}", file=sys.stderr)
        return 1
    SCRATCH.mkdir(parents=True, exist_ok=True)
    same = {"table": str(args.table), "quick": args.quick, "jobs": args.jobs}
    rows, parts = [], []
    if args.out.is_file():  # the same comparison, interrupted or run by parts: keep its finished runs
        old = json.loads(args.out.read_text())
        if all(old.get(key) == value for key, value in same.items()):
            rows, parts = old["rows"], old["parts"]
    _, updates, episodes = run_budget(table, args.quick)
    head = {**same, "updates": updates, "threads": 1, "eval_episodes": episodes}

    def save(rows: list[dict]) -> None:
        meta = provenance(load_before, ["mujoco", "h5py"])
        for row in rows:
            row.setdefault("part", len(parts))  # this invocation's runs
        summary = {**head, "meta": meta, "parts": [*parts, meta], "rows": rows, "corl": CORL}
        write_json_atomic(args.out, summary)

    d3rlpy_rows(python, table, datasets, args, rows, save)
    print(f"results: {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
