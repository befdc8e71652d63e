"""docs/benchmarks.md, IMPALA (issue #49): CartPole-v1 within 500k steps (impala_cartpole.json), MinAtar Breakout
at 1M steps against acrl A3C (impala_minatar.json), both from benchmarks/seed_runs.py, and the speed against
RLlib's IMPALA and acrl A3C (impala_vs_rllib.json, benchmarks/impala_vs_rllib.py). Each part is empty until its
result exists."""

from __future__ import annotations

from sections.formats import conditions, kilo, met, n, pct, table, x

IMPALA_MINATAR = ("acrl IMPALA, 2 actors (the MinAtar preset)", "acrl A3C, 2 workers (the MinAtar preset)")
"""impala_minatar.json's settings (benchmarks/seed_runs.py `IMPALA_MINATAR`): IMPALA's, then its peer's."""


def impala(results: dict[str, dict]) -> str:
    """The IMPALA section: its heading and the parts whose results exist; empty while none does."""
    parts = [part(results) for part in (impala_cartpole, impala_minatar, impala_vs_rllib)]
    if not any(parts):
        return ""
    return "## IMPALA (V-trace, actors on Ray)\n\n" + "\n\n".join(p for p in parts if p)


def impala_cartpole(results: dict[str, dict]) -> str:
    """CartPole-v1, 3 seeds, 500k steps: each seed's best evaluation and best.pt on 10 fresh episodes; the goal,
    >= 475 on every seed, judged on the fresh episodes (as dqn_cartpole's)."""
    d = results.get("impala_cartpole")
    if d is None:
        return ""
    runs = d["runs"]
    rows = [
        [
            str(r["seed"]),
            f"{n(r['best_eval'])} at {kilo(r['best_step'])}",
            n(r["final_eval"], 1),
            n(r["best_checkpoint_fresh_10_episodes"], 1),
        ]
        for r in runs
    ]
    fresh = [r["best_checkpoint_fresh_10_episodes"] for r in runs]
    return f"""### CartPole-v1 within {kilo(d["total_steps"])} steps

`python benchmarks/seed_runs.py impala_cartpole` (`acrl train impala --env CartPole-v1 --actors 2`, the preset:
2 actors of 4 environments, unrolls of 20 steps, batches of 8 unrolls, the paper's RMSProp learner), {d["evaluation"]}.
{conditions(d)}

{table(["seed", "best evaluation", "last evaluation", "best.pt, 10 fresh episodes"], "rrrr", rows)}

Goal (#49: ≥ 475 within {kilo(d["total_steps"])} steps, 3 seeds; judged on best.pt's fresh episodes):
{met(min(fresh) >= 475)}, {sum(v >= 475 for v in fresh)} of {len(fresh)} seeds."""


def impala_minatar(results: dict[str, dict]) -> str:
    """MinAtar/Breakout-v1 at 1M steps: IMPALA's and A3C's last evaluations per seed with their IQMs; the goal,
    IMPALA's IQM at or above A3C's."""
    d = results.get("impala_minatar")
    if d is None:
        return ""
    settings = d["settings"]
    rows = [
        [
            key,
            ", ".join(n(r["final_return_mean"], 1) for r in settings[key]["runs"]),
            f"{n(settings[key]['iqm'], 2)} [{n(settings[key]['iqm_ci'][0], 2)}, {n(settings[key]['iqm_ci'][1], 2)}]",
        ]
        for key in IMPALA_MINATAR
    ]
    mine, peer = (settings[key]["iqm"] for key in IMPALA_MINATAR)
    (low, high), (peer_low, peer_high) = (settings[key]["iqm_ci"] for key in IMPALA_MINATAR)
    overlap = "overlap" if low <= peer_high and peer_low <= high else "do not overlap"
    note = f"\n\n{d['note']}" if "note" in d else ""
    return f"""### MinAtar/Breakout-v1 at {kilo(d["total_steps"])} steps, against acrl A3C

`python benchmarks/seed_runs.py impala_minatar` (each algorithm's MinAtar preset on the MinAtar CNN, IMPALA with 2
actors, A3C with 2 workers, seeds 0–2 each, one run at a time; {d["statistic"]}).
{conditions(d)}

{table(["", "last evaluation per seed", "IQM [95% CI]"], "lll", rows)}

Goal (#49: IMPALA's IQM at or above A3C's at the same steps): {met(mine >= peer)} ({n(mine, 2)} against
{n(peer, 2)}; the 95% CIs {overlap}).{note}"""


def impala_vs_rllib(results: dict[str, dict]) -> str:
    """acrl IMPALA against RLlib's IMPALA (env steps/s, same settings), against acrl A3C on the same cores, and
    from 1 to more actors with the learner's time split between waiting for unrolls and its own work."""
    d = results.get("impala_vs_rllib")
    if d is None:
        return ""
    s, rllib_version = d["settings"], d["rllib"]["version"]
    rows, verdicts, scaling, networks = [], [], [], []
    for env, r in d["envs"].items():
        acrl, rllib, a3c, e = r["acrl"], r["rllib"], r["a3c"], r["settings"]
        ratio = acrl["steps_per_s"] / rllib["steps_per_s"] if rllib else None
        rows.append(
            [
                env,
                f"{s['actors']} × {e['n_envs']}, {e['unroll_length']}, {e['batch_size']}",
                n(acrl["steps_per_s"]),
                n(rllib["steps_per_s"]) if rllib else "not run",
                f"**{x(ratio)}**" if ratio else "–",
                n(a3c["steps_per_s"]),
                x(acrl["steps_per_s"] / a3c["steps_per_s"]),
            ]
        )
        verdicts.append(f"{env} {met(ratio is not None and ratio >= 2)}" + (f" ({x(ratio)})" if ratio else ""))
        one = r["scaling"]["1"]["steps_per_s"] if "1" in r["scaling"] else None
        for actors, a in sorted(r["scaling"].items(), key=lambda item: int(item[0])):
            vs_one = x(a["steps_per_s"] / one) if one else "–"
            scaling.append(
                [env, actors, n(a["steps_per_s"]), vs_one, pct(a["wait_fraction"]), pct(1 - a["wait_fraction"])]
            )
        options = ", ".join(f"{key}={value}" for key, value in r["rllib_model_config"].items())
        networks.append(f"{env}: `DefaultModelConfig({options})`")
    runs = [run for r in d["envs"].values() for run in r.get("runs", {}).get("rllib", [])]
    gyms = {run["gymnasium"] for run in runs if "gymnasium" in run}
    pinned = f" with the gymnasium it pins, {', '.join(sorted(gyms))}" if gyms else ""
    rllib = f"RLlib {rllib_version} (its new API stack, in its own venv{pinned})"
    rllib = rllib if d["rllib"]["run"] else "RLlib (not run)"
    return f"""### Speed against RLlib's IMPALA and acrl A3C

`python benchmarks/impala_vs_rllib.py` (environment steps per second while training, evaluation off, each run's
steady rate after its first iteration, the median of {s["repeats"]} runs of {n(s["steps"])} steps, the libraries
taking turns going first): acrl IMPALA with the environment's preset at the recorded commit (the settings column;
presets changed since are not rerun here) against {rllib} with as many env runners of
as many environments (`num_envs_per_env_runner`), unrolls as long (`rollout_fragment_length`), batches as large
(`train_batch_size_per_learner`, in steps), its learner in the driver as acrl's (`num_learners=0`), the same
learner settings and the same networks ({"; ".join(networks)}; on MinAtar RLlib's catalog gives the policy and
the value each their own 128-unit layer where acrl shares one); RLlib steps Adam where acrl steps the paper's
RMSProp. acrl A3C: its preset for the environment, with as many workers, on the same cores.
{conditions(d)}

{
        table(
            [
                "environment",
                "actors × envs, unroll, batch",
                "acrl IMPALA",
                "RLlib IMPALA",
                "acrl / RLlib",
                "acrl A3C",
                "IMPALA / A3C",
            ],
            "llrrrrr",
            rows,
        )
    }

Goal (#49: ≥ 2× RLlib's env steps/s): {"; ".join(verdicts)}.

acrl IMPALA over its actor counts. The learner runs in the driver process and shares the cores with the actors;
"waiting" is its time in `ActorPool.take` (the iterations' `train/wait_s`), "learning" the rest of its
iterations (the V-trace update, the weights' publication, the run loop's bookkeeping):

{table(["environment", "actors", "steps/s", "vs 1 actor", "learner waiting", "learner learning"], "lrrrrr", scaling)}"""
