"""docs/benchmarks.md, Memory: PPO and A3C with an LSTM on partially observed tasks (recurrent_ppo_*.json,
a3c_lstm_*.json)."""

from __future__ import annotations

from sections.formats import conditions, met, n, table, x

MEMORY_LIBS = {
    "acrl": "acrl PPO-LSTM",
    "acrl_ff": "acrl PPO, feed-forward (the same settings)",
    "sb3": "SB3-contrib RecurrentPPO",
}
MEMORY_TASKS = {  # result file -> (what the LSTM must reach, None: reported only; its target as a sentence)
    "recurrent_ppo_position_only_cartpole": (0.95, "LSTM IQM ≥ 0.95 of the maximum (1.0), feed-forward far below"),
    "recurrent_ppo_repeat_previous": (
        None,
        "the POPGym paper's PPO-LSTM figure could not be read here (see above); against the maximum 1.0 and "
        "random play's −0.5",
    ),
    "recurrent_ppo_cartpole": (475.0, "the LSTM still solves the fully observed task: IQM ≥ 475"),
}
A3C_MEMORY = {  # result file (benchmarks/seed_runs.py) -> (its task, whether the LSTM must beat feed-forward)
    "a3c_lstm_popgym": ("popgym-PositionOnlyCartPoleEasy-v0", True),  # partially observed
    "a3c_lstm_minatar": ("MinAtar/Breakout-v1", False),  # the frames show the ball's trail: reported beside it
}


def memory(results: dict[str, dict]) -> str:
    """PPO with and without an LSTM, and SB3-contrib's RecurrentPPO (recurrent_ppo_*.json), and A3C with
    and without one (a3c_lstm_popgym.json, a3c_lstm_minatar.json); empty until any of them exists."""
    rows, notes, verdicts = [], [], []
    for name, (goal, target) in MEMORY_TASKS.items():
        if name not in results:
            continue
        d = results[name]
        summary = d["summary"]
        digits = 3 if d["args"]["env"].startswith("popgym-") else 0  # POPGym's returns lie in [-1, 1]
        for lib, s in summary.items():
            seeds = [r["return_mean"] for r in d["runs"][lib]]
            ci = f"[{n(s['return_iqm_ci'][0], digits)}, {n(s['return_iqm_ci'][1], digits)}]"
            rows.append(
                [d["args"]["env"], MEMORY_LIBS[lib], n(s["return_iqm"], digits), ci,
                 ", ".join(n(v, digits) for v in seeds), n(s["steps_per_s"])]
            )  # fmt: skip
        lstm = summary["acrl"]["return_iqm"]
        verdict = f"{d['args']['env']}: {target}" + (f": {met(lstm >= goal)}" if goal is not None else "")
        if "sb3" in summary:
            peer = summary["sb3"]
            speed = summary["acrl"]["steps_per_s"] / peer["steps_per_s"]
            low, high = summary["acrl"]["return_iqm_ci"]
            overlap = (
                "; the two 95% CIs overlap"
                if low <= peer["return_iqm_ci"][1] and peer["return_iqm_ci"][0] <= high
                else ""
            )
            verdict += (
                f"; against RecurrentPPO, return {n(lstm, digits)} against {n(peer['return_iqm'], digits)} "
                f"(≥: {met(lstm >= peer['return_iqm'])}{overlap}), training steps/s {x(speed)} "
                f"(≥ 2×: {met(speed >= 2)})"
            )
        verdicts.append(verdict)
        notes.append(f"{d['args']['env']}, {n(d['args']['steps'])} steps, {d['args']['seeds']} seeds. {conditions(d)}")
    a3c_rows = []
    for name, (env, must_beat) in A3C_MEMORY.items():
        if name not in results:
            continue
        d = results[name]
        for label, s in d["settings"].items():
            ci = f"[{n(s['iqm_ci'][0], 2)}, {n(s['iqm_ci'][1], 2)}]"
            seeds = ", ".join(n(r["final_return_mean"], 2) for r in s["runs"])
            a3c_rows.append([env, label, n(s["iqm"], 2), ci, seeds])
        lstm_iqm, ff_iqm = (s["iqm"] for s in d["settings"].values())
        verdicts.append(
            f"{env}: A3C with an LSTM above the feed-forward A3C: {met(lstm_iqm > ff_iqm)}"
            if must_beat
            else f"{env} (fully observed): A3C with an LSTM beside the feed-forward A3C, {n(lstm_iqm, 2)} against "
            f"{n(ff_iqm, 2)} (reported)"
        )
        notes.append(f"A3C, {env}: {conditions(d)}")
    if not verdicts:
        return ""
    tables = []
    if rows:
        tables.append(table(["task", "agent", "return IQM", "95% CI", "per seed", "steps/s"], "llrllr", rows))
    if a3c_rows:
        tables.append(table(["task", "A3C, 2 workers", "return IQM", "95% CI", "per seed"], "llrll", a3c_rows))
    return f"""## Memory: PPO and A3C with an LSTM on partially observed tasks

`python benchmarks/recurrent_ppo.py`: acrl's PPO preset for each task (an LSTM of 256 cells after a 64-64 tanh
encoder, shared by actor and critic), the same settings without the LSTM, and SB3-contrib's RecurrentPPO with
the same settings (the script's docstring lists them); one torch thread each, runs alternating. Return: the mean
of 20 deterministic episodes after training, on an environment seeded apart; IQM with its 95% bootstrap CI over
seeds (rliable, as `acrl sweep`; with 3 seeds the IQM is the mean). POPGym returns lie in [−1, 1] (1.0 is the
best), CartPole-v1's in [0, 500]. The POPGym paper (Morad et al. 2023, ICLR) reports PPO-LSTM per task in its
appendix as MMER, the best mean training return of any batch over 3 trials (10M-15M steps, RLlib); that
appendix was not readable from this machine, so its figure is not quoted here.

{(chr(10) * 2).join(tables)}

{chr(10).join("- " + v for v in verdicts)}

{chr(10).join("- " + note for note in notes)}"""
