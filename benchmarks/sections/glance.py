"""The README's "results at a glance": one row per headline figure, each with its target."""

from __future__ import annotations

import statistics

from sections.bcq import DISCRETE_AGENTS
from sections.dqn import MINATAR_DQN, reaches_paper_dqn
from sections.formats import kilo, n, pct, signed, table, x
from sections.memory import A3C_MEMORY
from sections.pixels import hours_to_best


def glance(results: dict[str, dict]) -> str:
    """The README's "results at a glance": one row per headline figure, each with its target."""
    ppo = results["ppo_vs_sb3"]["parts"]["throughput"]["results"]
    cart, ant8 = ppo["CartPole-v1, 8 envs"], ppo["Ant-v5, 8 envs"]
    ant = results["ppo_long_ant"]["parts"]["long Ant-v5"]["results"]["acrl"]["mean_return"]
    rerun = results["ppo_ant_1m_rerun"]["mean_final_return"]
    one = next(
        r for r in results["a3c_scaling"]["summary"] if r["n_steps"] == 20 and r["method"] == "acrl A3C, 1 worker"
    )
    race = results["a3c_vs_a2c"]["median"]
    share = race["acrl A3C"]["wall_s"] / race["SB3 A2C"]["wall_s"]
    preset = results["a3c_pendulum_1m"]["rounds"][-1]["settings"]["n_envs=2, n_steps=10 (the preset now)"]["runs"]
    pendulum = statistics.mean(r["final_return_mean"] for r in preset)
    bcq = results["update_roofline"]["threads"]["1"]["bcq"]
    sac = results["sac_hopper"]["mean_final_eval"]
    sweep = results["sweep_speedup"]["median"]["speedup_over_shell_loop"]
    rows = [
        [
            "PPO training steps/s against SB3 (CartPole-v1, 8 envs)",
            x(cart["median paired acrl/sb3"]),
            f"≥ 2×: {'met' if cart['median paired acrl/sb3'] >= 2 else 'not met'}",
        ],
        [
            "PPO on Ant-v5 against stepping the raw envs (8 envs)",
            x(ant8["median paired acrl/raw"]),
            f"≥ 0.75×: {'met' if ant8['median paired acrl/raw'] >= 0.75 else 'not met'}",
        ],
        [
            "PPO Ant-v5 after 1M steps, mean of 3 seeds (rerun)",
            f"{n(ant)} ({n(rerun)})",
            f"≥ 2,500: {'met' if min(ant, rerun) >= 2500 else 'not met'}",
        ],
        [
            "A3C, 1 worker, against SB3 A2C (CartPole-v1, t_max 20)",
            f"{x(one['vs_sb3'])}, {n(one['steady_steps_per_s'])} steps/s",
            f"≥ 4× and 5,500: {'met' if one['vs_sb3'] >= 4 and one['steady_steps_per_s'] >= 5500 else 'not met'}",
        ],
        ["A3C time to 475 on CartPole-v1 against SB3 A2C", x(share), f"≤ 0.5×: {'met' if share <= 0.5 else 'not met'}"],
        [
            f"A3C Pendulum-v1 after 1M steps, mean of {len(preset)} seeds",
            n(pendulum),
            f"≥ −200: {'met' if pendulum >= -200 else 'not met'}",
        ],
        [
            "BCQ update: torch.mm roofline, d3rlpy (1 thread)",
            f"{pct(bcq['of_roofline_mm'])}, {x(bcq['acrl'] / bcq['d3rlpy'])}",
            f"≥ 75%, > 1×: {'met' if bcq['of_roofline_mm'] >= 0.75 and bcq['acrl'] > bcq['d3rlpy'] else 'not met'}",
        ],
        [
            "SAC Hopper-v5 at 300k steps, last evaluation, mean of 3 seeds",
            n(sac),
            f"≥ 2,500: {'met' if sac >= 2500 else 'not met'}",
        ],
        ["`acrl sweep` of 4 runs on 2 cores against a shell loop", x(sweep), "(reported)"],
    ]

    def said(ok: bool) -> str:
        return "met" if ok else "not met"

    atari = results.get("atari_speed", {}).get("results", {})
    if "acrl/sb3" in atari.get("ratios", {}):
        ratios = atari["ratios"]
        result = f"{x(ratios['acrl/sb3'])} (1 thread)"
        if "acrl bf16/sb3" in ratios:
            result += f", {x(ratios['acrl bf16/sb3'])} (1 thread, bf16)"
        if "threads" in atari:
            result += f", {x(atari['threads']['ratio'])} ({atari['threads']['threads']} threads)"
        best = max(ratios["acrl/sb3"], ratios.get("acrl bf16/sb3", 0.0))
        # this machine's speed moves by 10-20% between runs minutes apart (atari_speed.json's note)
        close = " (by less than the spread between runs)" if abs(best / 2.5 - 1) < 0.1 else ""
        rows.append(
            [
                "PPO Atari training steps/s against SB3 (8 envs)",
                result,
                f"≥ 2.5× on 1 thread: {said(best >= 2.5)}{close}",
            ]
        )
    if "a3c" in atari:
        ratio = atari["a3c"]["ratio"]
        rows.append(["A3C Atari, 2 workers, against SB3 A2C, 2 envs (t_max 5)", x(ratio), f"≥ 3×: {said(ratio >= 3)}"])
    if "update_of_best" in atari.get("roofline", {}):
        share = atari["roofline"]["update_of_best"]
        rows.append(
            ["PPO Atari update against the best kernel (fp32 or bf16)", pct(share), f"≥ 70%: {said(share >= 0.7)}"]
        )
    if "memory" in atari:
        peak = max(atari["memory"]["self_mb"], atari["memory"]["children_mb"])
        rows.append(["Peak RSS of a PPO Atari run", f"{n(peak)} MB", f"≤ 2 GB: {said(peak <= 2048)}"])
    if "ppo_pong" in results:
        scores = [r["best_checkpoint_fresh_10_games"] for r in results["ppo_pong"]["runs"].values()]
        result = ", ".join(signed(v, 1) for v in scores)
        for r in results.get("ppo_pong_no_sticky", {}).get("runs", {}).values():
            frames = r["eval_curve"][-1][0] * 4 / 1e6
            result += f"; no sticky actions, {frames:.0f}M frames: {signed(r['best_checkpoint_fresh_10_games'], 1)}"
        rows.append(
            [
                "PPO Pong-v5 within 10M frames, best.pt on 10 games",
                result,
                f"≥ +18: {said(min(scores) >= 18)}",
            ]
        )
    for name, game, goal, score in (("ppo_pong_10m", "Pong", 18, signed), ("ppo_breakout_10m", "Breakout", 300, n)):
        if name not in results:
            continue
        runs = results[name]["runs"].values()
        scores = [r["best_checkpoint_fresh_10_games"] for r in runs]
        ok = min(scores) >= goal
        unfinished = [kilo(r["eval_curve"][-1][0]) for r in runs if r.get("finished") is False]
        verdict = f"not met yet (unfinished at {', '.join(unfinished)})" if unfinished and not ok else said(ok)
        rows.append(
            [
                f"PPO {game} (no sticky actions) within 10M agent steps, best.pt on 10 games",
                ", ".join(f"{score(r['best_checkpoint_fresh_10_games'], 1)} at {kilo(r['best_step'])}" for r in runs),
                f"≥ {score(goal)}: {verdict}",
            ]
        )
    if "a3c_pong_reference" in results:
        runs = results["a3c_pong_reference"]["runs"]
        scores = [r["best_checkpoint_fresh_10_games"] for r in runs.values()]
        hours = [hours_to_best(r) for r in runs.values()]
        result = f"{', '.join(signed(v, 1) for v in scores)} ({len(scores)} of 3 seeds; "
        result += f"{', '.join(f'{h:.1f}' for h in hours)} h)"
        for seed, r in results.get("a3c_pong_reference_sticky", {}).get("runs", {}).items():
            result += (
                f"; with sticky actions (ALE/Pong-v5), seed {seed}: {signed(r['best_checkpoint_fresh_10_games'], 1)} "
                f"({r['hours_to_best']:.1f} h)"
            )
        rows.append(
            [
                "A3C Pong (no sticky actions), 2 workers, best.pt on 10 games (the `reference` preset)",
                result,
                f"≥ +18 within 2 h: {said(min(scores) >= 18 and max(hours) <= 2)}",
            ]
        )
    if "impala_pong" in results:
        runs = results["impala_pong"]["runs"]
        scores = [r["best_checkpoint_fresh_10_games"] for r in runs.values()]
        hours = [hours_to_best(r) for r in runs.values()]
        rows.append(
            [
                "IMPALA Pong (no sticky actions), 2 actors, best.pt on 10 games (the Atari preset)",
                ", ".join(f"{signed(v, 1)} ({h:.1f} h)" for v, h in zip(scores, hours)),
                f"≥ +18 within 2 h: {said(min(scores) >= 18 and max(hours) <= 2)}",
            ]
        )
    if "minatar_vs_sb3" in results:
        stats = results["minatar_vs_sb3"]["stats"]
        pairs = [
            by[ours]["iqm"] >= by[peer]["iqm"]
            for by in stats.values()
            for ours, peer in (("acrl PPO", "SB3 PPO"), ("acrl A3C", "SB3 A2C"))
            if ours in by and peer in by
        ]
        rows.append(
            [
                "MinAtar final-return IQM at or above SB3 (PPO; A3C against A2C), rows",
                f"{sum(pairs)} of {len(pairs)}",
                f"every row: {said(all(pairs))}",
            ]
        )
    if "dqn_vs_sb3" in results:
        dqn = results["dqn_vs_sb3"]["results"]
        finals = [by["acrl"]["return_mean"] for by in dqn["seeds"].values()]
        rows.append(
            [
                "DQN training steps/s against SB3 DQN (CartPole-v1, the zoo's settings)",
                x(dqn["median"]["speed_ratio"]),
                f"≥ 1.5×: {said(dqn['median']['speed_ratio'] >= 1.5)}",
            ]
        )
        rows.append(
            [
                f"DQN CartPole-v1 final return within 50k steps, {len(finals)} seeds",
                ", ".join(n(v) for v in finals),
                f"≥ 475: {said(min(finals) >= 475)}",
            ]
        )
    if "dqn_cartpole" in results:
        fresh = [r["best_checkpoint_fresh_10_episodes"] for r in results["dqn_cartpole"]["runs"]]
        rows.append(
            [
                f"DQN CartPole-v1 best.pt (10 fresh episodes) within 50k steps, {len(fresh)} seeds",
                ", ".join(n(v) for v in fresh),
                f"≥ 475: {said(min(fresh) >= 475)}",
            ]
        )
    position_only = results.get("recurrent_ppo_position_only_cartpole", {}).get("summary")
    if position_only:
        lstm, ff, sb3 = (position_only[lib] for lib in ("acrl", "acrl_ff", "sb3"))
        rows.append(
            [
                "PPO-LSTM on POPGym PositionOnlyCartPoleEasy (max 1.0), IQM of 3 seeds; feed-forward",
                f"{n(lstm['return_iqm'], 2)}; {n(ff['return_iqm'], 2)}",
                f"≥ 0.95: {said(lstm['return_iqm'] >= 0.95)}",
            ]
        )
        speed = lstm["steps_per_s"] / sb3["steps_per_s"]
        rows.append(
            ["PPO-LSTM training steps/s against SB3-contrib RecurrentPPO", x(speed), f"≥ 2×: {said(speed >= 2)}"]
        )
    for name, (env, must_beat) in A3C_MEMORY.items():
        if name in results:
            lstm_a3c, ff_a3c = results[name]["settings"].values()
            rows.append(
                [
                    f"A3C LSTM against feed-forward A3C, {env}, IQM of 3 seeds",
                    f"{n(lstm_a3c['iqm'], 2)} against {n(ff_a3c['iqm'], 2)}",
                    f"above: {said(lstm_a3c['iqm'] > ff_a3c['iqm'])}" if must_beat else "(reported)",
                ]
            )
    for name in (name for name in MINATAR_DQN if name in results):
        d = results[name]
        train, paper = d["training_return"], d.get("paper_dqn")
        measured = (
            f"DQN {MINATAR_DQN[name]}, training return at {kilo(d['at_frames'])} steps, IQM of {len(d['seeds'])} seeds"
        )
        result = f"{n(train['iqm'], 1)} [{n(train['iqm_ci'][0], 1)}, {n(train['iqm_ci'][1], 1)}]"
        if paper is None:
            rows.append([measured, result, "(reported)"])
        else:
            there = "-" if paper["there"] is None else n(paper["there"], 1)
            rows.append(
                [
                    f"{measured} (the MinAtar paper's DQN)",
                    f"{result} ({there})",
                    f"not below the paper's beyond the 95% CI: {said(reaches_paper_dqn(d))}",
                ]
            )
    if "discrete_bcq_breakout" in results:
        d = results["discrete_bcq_breakout"]
        t = d["table"]
        learners = [agent for agent in DISCRETE_AGENTS if agent != "behavioral" and agent in t]
        cells = ", ".join(f"{DISCRETE_AGENTS[a].split(' (')[0]} {n(t[a]['imperfect']['iqm'], 1)}" for a in learners)
        rows.append(
            [
                f"MinAtar Breakout, imperfect buffer, offline, IQM of {len(d['seeds'])} seeds (behavioral policy)",
                f"{cells} ({n(t['behavioral']['imperfect']['return'][0], 1)})",
                "(reported; paper: BCQ ≥ behavioral > DQN)",
            ]
        )
    return table(["measurement", "result", "target"], "lrl", rows)
