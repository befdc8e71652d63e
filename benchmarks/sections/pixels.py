"""docs/benchmarks.md, the pixel sections: MinAtar against SB3 (minatar_vs_sb3.json), Atari speed
(atari_speed.json), Pong-v5 from pixels (ppo_pong.json, ppo_pong_no_sticky.json, ppo_pong_10m.json, a3c_pong.json,
a3c_pong_reference.json, a3c_pong_reference_sticky.json, impala_pong.json) and Breakout (ppo_breakout_10m.json)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import groupby

from acrl.core import provenance
from sections.formats import conditions, kilo, met, n, pct, signed, table, x


def minatar_vs_sb3(results: dict[str, dict]) -> str:
    """acrl PPO and A3C against SB3 PPO and A2C on MinAtar; empty until the result exists."""
    d = results.get("minatar_vs_sb3")
    if d is None:
        return ""
    st = d["settings"]
    rows, short = [], []
    for game, by_algo in d["stats"].items():
        for algo, s in by_algo.items():
            seeds = [r["return_mean"] for r in d["runs"] if r["game"] == game and r["algo"] == algo]
            ci = f"[{n(s['iqm_ci'][0], 2)}, {n(s['iqm_ci'][1], 2)}]"
            rows.append([game, algo, n(s["iqm"], 2), ci, n(s["mean"], 2), ", ".join(n(v, 1) for v in seeds)])
        for ours, peer in (("acrl PPO", "SB3 PPO"), ("acrl A3C", "SB3 A2C")):
            if ours in by_algo and peer in by_algo and by_algo[ours]["iqm"] < by_algo[peer]["iqm"]:
                short.append(f"{ours} on {game}")
    ok = not short
    return f"""## MinAtar: acrl PPO and A3C against SB3 PPO and A2C

`python benchmarks/minatar_vs_sb3.py` ({n(int(st["steps"]))} steps per run, {st["seeds"]} seeds; acrl's MinAtar
presets, SB3 with the same hyperparameters, the same MinAtar CNN (acrl's encoder as SB3's features
extractor) and the same budget; A3C with {st["a3c_workers"]} workers against A2C with as many envs and the
same t_max). Final return: the mean of {st["eval_episodes"]} deterministic episodes after the last update,
on an environment seeded apart; IQM and mean over seeds with 95% bootstrap CIs (rliable,
{n(int(st["bootstrap_reps"]))} resamples, as `acrl sweep`).
{conditions(d)}

{table(["game", "algorithm", "IQM", "95% CI", "mean", "per seed"], "llrlrl", rows)}

Target (acrl's IQM at or above SB3's on every row) {met(ok)}{"" if ok else ": below on " + ", ".join(short)}.
For scale, the MinAtar paper (Young and Tian 2019, Fig. 2) plots DQN and actor-critic curves over
5M frames; their numbers are not quoted here."""


def atari_speed(results: dict[str, dict]) -> str:
    """PPO and A3C speed on Atari frames against SB3, the raw env and the machine's rate; empty until it exists."""
    d = results.get("atari_speed")
    if d is None:
        return ""
    r = d["results"]
    lines = []
    if "ppo" in r and "sb3" in r:
        ratio = r["ratios"]["acrl/sb3"]
        lines.append(
            f"- PPO training steps/s (8 envs, {int(d['settings']['rollouts'])} rollouts after a warm-up): acrl "
            f"{n(r['ppo']['steps_per_s'])}, SB3 {n(r['sb3']['steps_per_s'])}: **{x(ratio)}** "
            f"(goal ≥ 2.5×: {met(ratio >= 2.5)})."
        )
    if "acrl bf16/sb3" in r.get("ratios", {}):
        ratio = r["ratios"]["acrl bf16/sb3"]
        lines.append(
            f"- The same in bf16 (`precision=bf16`: the rollout's and the update's forward passes under bfloat16 "
            f"autocast; PPO's default for frames on a CPU with bfloat16, `precision=auto`): "
            f"{n(r['ppo_bf16']['steps_per_s'])} steps/s, {x(r['ratios']['bf16/fp32'])} "
            f"fp32's: **{x(ratio)}** SB3's (goal ≥ 2.5×: {met(ratio >= 2.5)})."
        )
    if "threads" in r:
        t = r["threads"]
        lines.append(
            f"- The same on {t['threads']} torch threads (the update has the machine's cores to itself between "
            f"rollouts): acrl {n(t['acrl'])}, SB3 {n(t['sb3'])}: **{x(t['ratio'])}**."
        )
    if "ppo" in r and "raw" in r:
        lines.append(
            f"- The raw AtariVectorEnv, 8 envs, random actions: {n(r['raw']['steps_per_s'])} steps/s; acrl PPO runs at "
            f"{pct(r['ratios']['acrl/raw'])} of it."
        )
    if "update_of_best" in r.get("roofline", {}):
        f = r["roofline"]
        ran = [p for p in ("fp32", "bf16") if p in f]
        updates = ", ".join(f"{p} {n(f[p]['update_gflops'], 1)}" for p in ran)
        rollouts = ", ".join(f"{p} {n(f[p]['rollout_gflops'], 1)}" for p in ran)
        lines.append(
            f"- The update: {updates} GFLOP/s (forward and backward counted from the layer sizes, "
            f"{n(f['update_flops_per_sample'] / 1e6, 1)} MFLOP a sample); the faster is **{pct(f['update_of_best'])}** "
            f"of the best rate measured in the same run ({n(f['best_gflops'], 1)} GFLOP/s, the fastest of the CNN's "
            f"convolutions and torch.mm in {' and '.join(f['rates_gflops'])}; goal ≥ 70%: "
            f"{met(f['update_of_best'] >= 0.7)}). The rollout's forward passes: {rollouts} GFLOP/s."
        )
    if "memory" in r:
        peak = max(r["memory"]["self_mb"], r["memory"]["children_mb"])
        lines.append(f"- Peak RSS of the acrl PPO process: {n(peak)} MB (goal ≤ 2,048 MB: {met(peak <= 2048)}).")
    if "a3c" in r:
        a = r["a3c"]
        lines.append(
            f"- A3C, {int(d['settings']['a3c_workers'])} workers, t_max 5: {n(a['acrl A3C']['steps_per_s'])} steps/s "
            f"against SB3 A2C with as many envs, n_steps 5: {n(a['SB3 A2C']['steps_per_s'])}: **{x(a['ratio'])}** "
            f"(goal ≥ 3×: {met(a['ratio'] >= 3)})."
        )
    body = "\n".join(lines) + (f"\n\n{d['note']}" if "note" in d else "")
    return f"""## Atari speed: PPO and A3C against SB3, the raw env and the machine

`python benchmarks/atari_speed.py` on {d["env"]} (one torch thread; acrl's Atari preset, SB3 with the same
hyperparameters, its `make_atari_env` preprocessing and its NatureCNN, the same network; each PPO in a
fresh process). {conditions(d)}

{body}"""


def atari_profile(results: dict[str, dict]) -> str:
    """Where PPO's Atari time goes, operator by operator, in fp32 and bf16 (atari_profile.json); empty until it
    exists."""
    d = results.get("atari_profile")
    if d is None:
        return ""
    rows = []
    for precision, p in d["profiles"].items():
        for phase in ("collect", "update"):
            r = p[phase]
            ops = ", ".join(
                f"{op['op'].removeprefix('aten::')} {pct(op['share'])}" for op in r["top"] if op["share"] >= 0.02
            )
            rows.append(
                [precision, phase, n(r["wall_s"] / d["settings"]["rollouts"], 2), pct(r["outside_ops_share"]), ops]
            )
    fastest = "bf16" if "bf16" in d["profiles"] else "fp32"
    profile = d["profiles"][fastest]
    update, collect, steps = (
        {op["op"]: op["share"] for op in profile["update"]["top"]},
        profile["collect"],
        profile["steps_per_rollout"],
    )
    conv = update.get("aten::convolution_backward", 0) + update.get("aten::mkldnn_convolution", 0)
    raw = results.get("atari_speed", {}).get("results", {}).get("raw")
    emulator = (
        f": the raw env alone takes {n(steps / raw['steps_per_s'], 2)} s for {n(steps)} steps (the Atari speed section)"
        if raw
        else ""
    )
    reading = (
        f"In {fastest}, the update is mostly the convolutions ({pct(conv)}, backward and forward), then copies "
        f"(`copy_`, {pct(update.get('aten::copy_', 0))}) and the minibatches' gather (`index_select`, "
        f"{pct(update.get('aten::index_select', 0))}); the optimizer's fused step is "
        f"{pct(update.get('aten::_fused_adam_', 0))}. "
        f"A rollout spends {pct(collect['outside_ops_share'])} of its time outside torch, about what the emulator "
        f"costs{emulator}."
    )
    return f"""### Where PPO's Atari time goes

`python benchmarks/atari_profile.py` (torch.profiler, {d["settings"]["rollouts"]} rollouts and as many updates
after a warm-up, one thread, {d["env"]}): the seconds of a rollout of 1,024 steps (`collect`) and of its update
(4 epochs of 4 minibatches of 256) with the profiler on, the share outside torch's operators (the environment, which
steps in ALE's threads, and Python), and the operators that took 2% or more of the phase's wall clock (self time).
{conditions(d)}

{table(["precision", "phase", "s per rollout", "outside torch", "operators (share of the wall clock)"], "llrrl", rows)}

{reading}"""


def a3c_profile(results: dict[str, dict]) -> str:
    """Where an A3C worker's Atari time goes against SB3 A2C's, phase by phase (a3c_profile.json); empty until it
    exists."""
    d = results.get("a3c_profile")
    if d is None:
        return ""
    a3c, a2c = d["profiles"]["acrl A3C worker"], d["profiles"]["SB3 A2C"]
    phases = list(dict.fromkeys([*a3c["ms_per_step"], *a2c["ms_per_step"]]))
    rows = [
        [phase, *(n(p["ms_per_step"][phase], 2) if phase in p["ms_per_step"] else "" for p in (a3c, a2c))]
        for phase in phases
    ]
    a3c_ms, a2c_ms = (sum(p["ms_per_step"].values()) for p in (a3c, a2c))
    rows.append(["**all**", f"**{n(a3c_ms, 2)}**", f"**{n(a2c_ms, 2)}**"])
    workers, encoder = d["settings"]["a2c_envs"], d["settings"]["encoder"]
    bound, needed = workers * a2c_ms / a3c_ms, workers * a2c_ms / 3
    rate = d["workers"]["steps_per_s"]
    return f"""### Where A3C's Atari time goes

`python benchmarks/a3c_profile.py`: one acrl A3C worker and SB3 A2C with {workers} envs, as the Atari speed section
runs them ({d["env"]}, t_max 5, one torch thread, the preset's CNN: {encoder}), each in a fresh process,
{n(d["settings"]["steps"])} agent steps after a warm-up; the wall clock per agent step in milliseconds, split by
timing what each calls (the acting forward passes; the env's steps; the rest of the rollout's collection; A3C's copy
of the global parameters; its loss's forward passes; the backward pass with the gradient clip, SB3's with its loss's
forward pass; the optimizer's step; the remainder, A3C's start-up in the worker included). {conditions(d)}

{table(["phase", "acrl A3C, one worker (ms per step)", f"SB3 A2C, {workers} envs (ms per step)"], "lrr", rows)}

One worker alone runs {n(a3c["steps_per_s"])} steps/s, SB3 A2C {n(a2c["steps_per_s"])} on one core: {workers} workers
on {workers} cores, each as fast as one alone, would run {x(bound)} SB3 A2C's steps/s. The goal's 3× needs a worker
at {n(needed, 2)} ms per agent step, {pct(1 - needed / a3c_ms)} less than its {n(a3c_ms, 2)}. In the same run A3C with
{workers} workers ran {n(rate)} steps/s over {n(d["workers"]["steps"])} steps (start-up included),
{pct(rate / (workers * a3c["steps_per_s"]))} of {workers} times one worker's rate:
{x(rate / a2c["steps_per_s"])} SB3 A2C's profiled rate."""


def hours_to_best(run: dict) -> float:
    """A Pong run's wall clock to its best checkpoint, hours, less the time it was paused (`seed_runs.atari_run`'s
    `hours_to_best` and `paused_hours`): what the 2-hour goals of A3C and IMPALA count."""
    return run["hours_to_best"] - run.get("paused_hours", 0.0)


def session_seconds(session: dict) -> float:
    """A session's wall clock in seconds: its `wall_s` where it was written by hand (sessions before sessions.json),
    else `acrl.core.provenance.session_seconds` (its "ended" less its "started")."""
    return float(session["wall_s"]) if "wall_s" in session else provenance.session_seconds(session)


def training_sessions(sessions: list[dict]) -> str:
    """Where and how a run trained, from its sessions (`acrl resume` writes one per segment to sessions.json;
    `seed_runs.py` copies them): consecutive sessions on the same CPU in the same precision as one stretch, "start–end
    agent steps, precision, CPU (k sessions, h hours of wall clock)", a field a session did not record left out;
    steps before the first recorded session are said to be unrecorded. "" without sessions."""
    stretches = []
    for (cpu, precision), group in groupby(sessions, key=lambda s: (s.get("cpu"), s.get("precision"))):
        group = list(group)
        hours = sum(session_seconds(s) for s in group) / 3600
        said = ", ".join(str(v) for v in (precision, cpu) if v)
        count = f"{len(group)} session{'s' if len(group) > 1 else ''}"
        steps = "–".join(kilo(step) if step else "0" for step in (group[0]["start_step"], group[-1]["end_step"]))
        stretches.append(f"{steps}{' ' + said if said else ''} ({count}, {hours:.1f} h)")
    if sessions and sessions[0]["start_step"] > 0:
        stretches.insert(0, f"0–{kilo(sessions[0]['start_step'])} not recorded")
    return "; ".join(stretches)


def game_rows(
    results: dict[str, dict], runs: Iterable[tuple[str, str, int | str]], score: Callable[..., str]
) -> tuple[list[list[str]], list[str]]:
    """The table rows and notes of the Atari runs of `seed_runs.py` (`atari_run`) among `results`: for each
    (result name, label, goal: a score to reach, or a note), a row per seed (agent steps, hours, the best and last
    evaluations, best.pt on 10 fresh games, the goal met or not) and a note per result (its training games, its
    note, its conditions); scores written by `score` (`signed` or `n`: goals whole, the rest to one decimal)."""
    rows, notes = [], []
    for name, label, goal in runs:
        if name not in results:
            continue
        d = results[name]
        for seed, r in d["runs"].items():
            fresh = r["best_checkpoint_fresh_10_games"]
            target = f"≥ {score(goal)}: {met(fresh >= goal)}" if isinstance(goal, int) else goal
            if name in ("a3c_pong_reference", "impala_pong"):  # best.pt within 2 h (paused time aside) and 4M steps
                hours = hours_to_best(r)
                target = f"≥ {score(goal)} within 2 h: {met(fresh >= goal and hours <= 2.0)} ({hours:.1f} h to best.pt)"
            rows.append(
                [
                    label,
                    seed,
                    kilo(r["eval_curve"][-1][0]) + (" (unfinished)" if r.get("finished") is False else ""),
                    f"{r['training_hours']:.1f}" if "training_hours" in r else "not recorded",
                    f"{score(r['best_eval'], 1)} at {kilo(r['best_step'])}",
                    score(r["final_eval"], 1),
                    score(fresh, 1),
                    target,
                ]
            )
        games = "; ".join(
            f"seed {seed}, {score(r['training_curve'][0][1], 1)} at {kilo(r['training_curve'][0][0])} and "
            f"{score(r['training_curve'][-1][1], 1)} at {kilo(r['training_curve'][-1][0])}"
            for seed, r in d["runs"].items()
        )
        trained = "; ".join(
            f"seed {seed}, {training_sessions(r['sessions'])}" for seed, r in d["runs"].items() if r.get("sessions")
        )
        trained = f" Training sessions (agent steps, precision, CPU): {trained}." if trained else ""
        note = f" {d['note']}" if "note" in d else ""
        notes.append(
            f"{label.split(',')[0]}: training games (stochastic actions, the mean of the last 100): {games}.{trained}"
            f"{note} {conditions(d)}"
        )
    return rows, notes


GAME_HEADER = ["agent", "seed", "agent steps", "hours", "best evaluation (5 games)", "last evaluation"]
"""The Atari runs' table columns, before best.pt's score and the goal."""


def pong(results: dict[str, dict]) -> str:
    """PPO and A3C learning Pong-v5, and PPO and A3C on PongNoFrameskip-v4 (ppo_pong.json, ppo_pong_no_sticky.json,
    ppo_pong_10m.json, a3c_pong.json, a3c_pong_reference.json, a3c_pong_reference_sticky.json, impala_pong.json
    from `seed_runs.py`); empty until one exists."""
    runs = (
        ("ppo_pong", "PPO, 8 envs (the `ALE/*-v5` preset), 2 torch threads", 18),
        ("ppo_pong_no_sticky", "PPO as above on PongNoFrameskip-v4 (no sticky actions)", "(sticky actions' cost)"),
        ("ppo_pong_10m", "PPO 10M (CleanRL's budget) on PongNoFrameskip-v4, 2 torch threads", 18),
        (
            "a3c_pong",
            "A3C `original` before 2026-12-06, 2 workers (the paper's agent then: the mean loss, torch's RMSProp "
            "eps, annealed over the run's budget, vf_coef 1.0)",
            "(the curve)",
        ),
        ("a3c_pong_reference", "A3C `reference` on PongNoFrameskip-v4, 2 workers", 18),
        ("a3c_pong_reference_sticky", "A3C `reference` on ALE/Pong-v5, 2 workers", "(sticky actions' cost)"),
        ("impala_pong", "IMPALA (the Atari preset) on PongNoFrameskip-v4, 2 actors", 18),
    )
    rows, notes = game_rows(results, runs, signed)
    if not rows:
        return ""
    header = [*GAME_HEADER, "best.pt, 10 games", "goal"]
    return f"""## Pong-v5 from pixels: PPO, A3C and IMPALA

Whole games, raw scores (−21 to +21), deterministic actions; an agent step is 4 frames (ALE v5, sticky actions
0.25; PongNoFrameskip-v4 is the same game and preprocessing without them, to tell what sticky actions cost from a
fault in the learner). The evaluation curves and the training games' scores are in the JSON files. For scale: CleanRL's
ppo_atari reports about +20 on PongNoFrameskip-v4 (no sticky actions) after 10M agent steps, 40M frames (Huang et
al. 2022); the first PPO runs here have a quarter of that, 10M frames, the 10M-step one all of it. The A3C paper
trained on 16 CPU threads and plots Pong against hours of training (Mnih et al. 2016, Figure 1); A3C here has 2
workers.

{table(header, "lrrrrrrl", rows)}

{chr(10).join("- " + note for note in notes)}"""


def breakout(results: dict[str, dict]) -> str:
    """PPO on BreakoutNoFrameskip-v4 with CleanRL's budget (ppo_breakout_10m.json from `seed_runs.py`); empty until
    it exists."""
    label = "PPO 10M (CleanRL's budget) on BreakoutNoFrameskip-v4, 2 torch threads"
    rows, notes = game_rows(results, [("ppo_breakout_10m", label, 300)], n)
    if not rows:
        return ""
    return f"""## Breakout from pixels: PPO with CleanRL's budget

Whole games (5 lives), raw scores, deterministic actions, no sticky actions; an agent step is 4 frames. CleanRL's
ppo_atari reports 414.7 ± 28.1 on BreakoutNoFrameskip-v4 after 10M agent steps, 40M frames, 3 seeds (Huang et al.
2022); issue #48's goal is 300 within the same budget. The evaluation curve and the training games' scores are in the
JSON file. Deterministic actions can stall Breakout: nothing presses FIRE for the agent (no fire reset,
`acrl.tasks.atari`), so a greedy policy that does not choose FIRE when a game starts or a life is lost waits until
the 108,000-frame limit with the score it has (an evaluation of 0.0 is five such games). CleanRL's figure is its
training games' return (stochastic actions, its FireResetEnv pressing FIRE after each reset): the notes' "training
games" are that statistic.

{table([*GAME_HEADER, "best.pt, 10 games", "goal"], "lrrrrrrl", rows)}

{chr(10).join("- " + note for note in notes)}"""
