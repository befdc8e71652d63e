"""BCQ learns from an imperfect dataset where offline DDPG does not (Fujimoto et al. 2019, Fig. 2).

The pipeline is the paper's: a behavioral DDPG trains online on Pendulum-v1 (acrl's DDPG preset,
20k steps), its best policy collects 100,000 `imperfect` transitions (N(0, 0.3) action noise and
a uniformly random action with probability 0.3), then BCQ (the paper's settings from
acrl/presets/bcq.yaml with smaller networks: 64-64 actor and critics, a 128-128 VAE) and DDPG
(64-64, gamma 0.99 as BCQ) learn from those transitions only, for 30,000 updates each. At the
paper's sizes a BCQ update takes ~50 ms of CPU (two hours for 30k with evaluations on a busy
2-core machine); with these sizes the whole test takes ~15-20 min on an idle 2-core machine.
Evaluations use the same 10 start states (seed + 10,000) for the behavioral policy and both
learners, so they are paired.
The cheap CI checks of BCQ learning are in tests/algos/test_bcq.py.
"""

import numpy as np
import pytest

from acrl import BCQ, DDPG
from acrl.core.config import preset_values
from acrl.core.evaluation import evaluate
from acrl.offline.collect import behavioral_run_dir, collect_dataset, load_policy


@pytest.mark.slow
def test_bcq_matches_the_behavioral_policy_on_pendulum_imperfect_data_and_ddpg_does_not(tmp_path):
    seed, updates = 0, 30_000
    collect_dataset("final", tmp_path / "final.h5", 20_000, env_id="Pendulum-v1", seed=seed)
    policy = load_policy(behavioral_run_dir(tmp_path / "final.h5"))
    behavioral = evaluate(policy, "Pendulum-v1", episodes=10, seed=seed + 10_000)["return_mean"]
    data = collect_dataset("imperfect", tmp_path / "imperfect.h5", 100_000,
                           policy=behavioral_run_dir(tmp_path / "final.h5"), seed=seed)
    assert len(data) == 100_000

    values, _ = preset_values("bcq", "Pendulum-v1", None)
    small = {"actor_hidden_sizes": (64, 64), "critic_hidden_sizes": (64, 64), "vae_hidden_sizes": (128, 128)}
    bcq = BCQ(dataset=str(tmp_path / "imperfect.h5"), **{**values, **small, "seed": seed, "total_steps": updates})
    bcq.learn(run_dir=tmp_path / "bcq", progress=False)
    ddpg = DDPG(dataset=str(tmp_path / "imperfect.h5"), seed=seed, total_steps=updates, eval_freq=values["eval_freq"],
                gamma=values["gamma"], hidden_sizes=(64, 64))
    ddpg.learn(run_dir=tmp_path / "ddpg", progress=False)

    def last_evals(run_dir, n=3):
        from acrl.core.plotting import read_curve
        return float(np.mean(read_curve(run_dir)[1][-n:]))

    bcq_best, ddpg_best = bcq.best_eval["return_mean"], ddpg.best_eval["return_mean"]
    bcq_late, ddpg_late = last_evals(tmp_path / "bcq"), last_evals(tmp_path / "ddpg")
    print(f"behavioral {behavioral:.0f}; BCQ best {bcq_best:.0f} (last 3 evals {bcq_late:.0f}); "
          f"offline DDPG best {ddpg_best:.0f} (last 3 evals {ddpg_late:.0f})")
    assert bcq_best >= behavioral - 0.1 * abs(behavioral)
    assert ddpg_late < bcq_late
