"""D4RL's datasets, built here for any environment, and D4RL's normalised score.

D4RL (Fu, Kumar, Nachum, Tucker, Levine 2020, "D4RL: Datasets for Deep Data-Driven Reinforcement
Learning", Sec. 5, and its README's Gym-MuJoCo table) made five datasets per locomotion task (Hopper,
HalfCheetah, Walker2d, Ant), each of 1M transitions:

- `random`: a randomly initialised policy. acrl takes uniformly random actions, the policy whose
  return D4RL's normalised score calls 0.
- `medium`: a policy trained online with SAC (Haarnoja et al. 2018) and stopped early, at about a
  third of the expert's performance; the data are that policy's.
- `medium-replay`: every transition in that SAC's replay buffer up to the point where it reached the
  medium level (so its size is where it stopped).
- `expert`: a policy trained to completion with SAC.
- `medium-expert`: the medium and expert data together, half each (D4RL: 1M + 1M).

`collect_d4rl` builds them. A SAC trained here runs through the run loop in a directory beside the
dataset (`sac_run_dir`: FILE's stem + "-sac-medium" or "-sac-expert"), its replay buffer keeping every
transition. The medium SAC stops at the first evaluation (every eval_freq steps, eval_episodes
episodes of deterministic actions: the loop's) whose mean return reaches the target: `target_return`,
or a third of the way from the random return to the expert's, R_random + (R_expert - R_random) / 3,
a normalised score of 33.3, with the expert return given (`expert_return`), else D4RL's for its
tasks (`D4RL_REFERENCE_RETURNS`), else (medium-expert) the expert policy's measured here. A medium
SAC that never reaches its target within its budget is refused: its run directory is removed and
nothing is written. The policies act as D4RL's did, sampling from their distribution (D4RL's dataset
reproducibility guide: the SAC's stochastic policy), with no added noise.

Each dataset records, as attributes, the undiscounted returns it was made with (the mean over
`REFERENCE_EPISODES` episodes on an evaluation environment seeded at seed + 10000): random_return
(uniformly random actions), medium_return and expert_return (each policy acting as it collected, or
expert_return as given), policy_return (the policy that made the data: the random, medium or expert
one; medium-expert has none), and for a medium SAC target_return, stop_step and stop_return (the
evaluation that stopped it); `recipe` says in a sentence how the dataset was made.

Normalised score (D4RL, Fu et al. 2020, Sec. 5): 100 (R - R_random) / (R_expert - R_random), 0 for
uniformly random actions and 100 for an expert. `normalized_score` takes D4RL's published reference
returns where the task is one of D4RL's (`D4RL_REFERENCE_RETURNS`), else the random and expert returns
measured here, and `reference_returns` says which. `acrl evaluate` reports it for a run trained from
a dataset (`dataset_score`).
"""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import torch

from acrl.algos.base import EVAL_SEED_OFFSET
from acrl.algos.off_policy import OffPolicyAgent
from acrl.core.envs import CheckFinite, env_factory
from acrl.core.errors import InputError
from acrl.core.evaluation import EpisodeActor, evaluate
from acrl.core.version import __version__
from acrl.offline.collect import (
    buffer_dataset,
    check_format,
    check_out,
    check_run_dir_free,
    check_steps,
    load_policy,
    train_behavioral,
    write_dataset,
)
from acrl.parts.datasets import D4RL_KEYS, OfflineDataset, collect_transitions, dataset_attrs

D4RL_KINDS = ("random", "medium", "medium-replay", "expert", "medium-expert")
"""D4RL's Gym-MuJoCo dataset kinds (Fu et al. 2020, Sec. 5)."""

MEDIUM_KINDS = ("medium", "medium-replay", "medium-expert")
"""The kinds that train a SAC to the medium level."""

TrainedSAC = tuple[OffPolicyAgent, Path]
"""A SAC trained for a dataset and its run directory."""

REFERENCE_EPISODES = 10
"""Episodes averaged for each return a dataset records."""

D4RL_REFERENCE_RETURNS = {
    "Hopper": (-20.272305, 3234.3),
    "HalfCheetah": (-280.178953, 12135.0),
    "Walker2d": (1.629008, 4592.3),
    "Ant": (-325.6, 3879.7),
}
"""D4RL's reference returns (random, expert) per locomotion task: REF_MIN_SCORE and REF_MAX_SCORE of
d4rl/infos.py (github.com/Farama-Foundation/D4RL; the v0 entries, which the v1 and v2 datasets reuse).
They were measured on gym's v3 tasks under mujoco-py; Gymnasium's v5 tasks are close but not the same:
Hopper-, Walker2d- and Ant-v5 give the healthy reward only while healthy, Walker2d-v5 gives both feet
friction 1.9 (0.9 for the right one before), Ant-v5 always counts the contact cost. A score against
them is on D4RL's scale, not exactly comparable."""


class References(NamedTuple):
    """The returns a normalised score scales between, and where they come from."""

    random: float
    expert: float
    source: str

    def score(self, return_: float) -> float:
        """100 (R - R_random) / (R_expert - R_random): 0 is the random policy's return, 100 the expert's."""
        return 100.0 * (return_ - self.random) / (self.expert - self.random)


def reference_returns(
    env_id: str, random_return: float | None = None, expert_return: float | None = None
) -> References:
    """The random and expert returns for `env_id`'s normalised score: D4RL's (`D4RL_REFERENCE_RETURNS`) where
    the task is one of D4RL's (Hopper, HalfCheetah, Walker2d, Ant, any version), else the ones given
    (measured here: a dataset's random_return and expert_return attributes).

    Raises:
        InputError: not a D4RL task and a return not given, or equal random and expert returns.
    """
    name = env_id.split("-v")[0]
    if name in D4RL_REFERENCE_RETURNS:
        low, high = D4RL_REFERENCE_RETURNS[name]
        source = (
            f"D4RL's {name.lower()} references (d4rl/infos.py, measured on gym's v3 task; {env_id} differs slightly)"
        )
        return References(low, high, source)
    if random_return is None or expert_return is None:
        raise InputError(
            f"{env_id} is not one of D4RL's tasks ({', '.join(D4RL_REFERENCE_RETURNS)}), so its normalised score "
            "needs the random and expert returns measured here: a dataset of `acrl collect --kind expert` or "
            "medium-expert records both (random_return, expert_return)."
        )
    if expert_return == random_return:
        raise InputError(f"the expert and random returns are both {expert_return}: no scale to normalise by.")
    return References(
        float(random_return), float(expert_return), "measured here (a dataset's random_return, expert_return)"
    )


def normalized_score(
    return_: float, env_id: str, random_return: float | None = None, expert_return: float | None = None
) -> float:
    """D4RL's normalised score, 100 (R - R_random) / (R_expert - R_random) (Fu et al. 2020, Sec. 5), with the
    references of `reference_returns`: 0 is uniformly random actions, 100 the expert.

    Raises:
        InputError: see `reference_returns`.
    """
    return reference_returns(env_id, random_return, expert_return).score(return_)


def dataset_score(return_: float, env_id: str, dataset: str | Path) -> dict[str, Any]:
    """What `acrl evaluate` adds for a run trained from `dataset`: {"normalized_score": `normalized_score` of
    `return_`, "normalized_score_reference": {"random_return", "expert_return", "source"}}, the references
    `reference_returns` takes (D4RL's, else the dataset's random_return and expert_return), or {} where none
    are known. A dataset that is no longer there warns, and only D4RL's references are left."""
    try:
        attrs = dataset_attrs(dataset)
    except InputError as error:
        warnings.warn(f"the run's dataset cannot be read ({error}); its measured references are unknown", stacklevel=2)
        attrs = {}
    try:
        refs = reference_returns(env_id, attrs.get("random_return"), attrs.get("expert_return"))
    except InputError:
        return {}
    reference = {"random_return": refs.random, "expert_return": refs.expert, "source": refs.source}
    return {"normalized_score": refs.score(return_), "normalized_score_reference": reference}


def medium_target(
    env_id: str,
    random_return: float,
    target_return: float | None = None,
    expert_return: float | None = None,
    measured_expert_return: float | None = None,
) -> tuple[float, str]:
    """Where a medium SAC stops (D4RL: about a third of the expert's performance), and why, in words.

    `target_return` when given; else R_random + (R_expert - R_random) / 3, a normalised score of 33.3, with
    R_expert the `expert_return` given (and the `random_return` measured here), else D4RL's references for
    its tasks (both returns: `D4RL_REFERENCE_RETURNS`), else the `measured_expert_return` (medium-expert's
    expert, measured here).

    Raises:
        InputError: none of those known (not a D4RL task, and no expert return given or measured).
    """
    if target_return is not None:
        return float(target_return), "--target-return"
    name = env_id.split("-v")[0]
    if expert_return is not None:
        low, high, source = random_return, float(expert_return), "--expert-return"
    elif name in D4RL_REFERENCE_RETURNS:
        low, high, source = *D4RL_REFERENCE_RETURNS[name], "D4RL's references"
    elif measured_expert_return is not None:
        low, high, source = random_return, float(measured_expert_return), "the expert's return measured here"
    else:
        raise InputError(
            f"a medium SAC on {env_id} needs where to stop: --target-return R, or --expert-return R (a third of the "
            f"way from the random return to R); D4RL's references cover {', '.join(D4RL_REFERENCE_RETURNS)} only."
        )
    return low + (high - low) / 3, f"a third of the way from random {low:.1f} to expert {high:.1f}, {source}"


def sac_run_dir(out: str | Path, role: str) -> Path:
    """Run directory of a SAC trained for a dataset: FILE's stem + "-sac-" + role ("medium" or "expert")."""
    out = Path(out)
    return out.with_name(f"{out.stem}-sac-{role}")


class UniformRandom:
    """The random policy: uniformly random actions over the action space, seeded (`acrl.core.evaluation.Predictor`)."""

    def __init__(self, action_space: gym.Space, seed: int):
        self.action_space = action_space
        self.action_space.seed(seed)

    def predict(self, obs: np.ndarray, deterministic: bool = True) -> Any:
        """One action drawn uniformly from the action space, whatever `obs` is (the Predictor interface)."""
        return self.action_space.sample()


def policy_return(policy: Any, env_id: str, seed: int) -> float:
    """Mean undiscounted return of `policy` (an acrl agent sampling its actions, or `UniformRandom`) over
    `REFERENCE_EPISODES` episodes of an environment seeded at seed + EVAL_SEED_OFFSET."""
    result = evaluate(policy, env_id, REFERENCE_EPISODES, deterministic=False, seed=seed + EVAL_SEED_OFFSET)
    return float(result["return_mean"])


def collect_d4rl(
    kind: str,
    out: str | Path,
    steps: int | None = None,
    env_id: str | None = None,
    policy: str | Path | None = None,
    target_return: float | None = None,
    expert_return: float | None = None,
    train_steps: int | None = None,
    seed: int = 0,
    preset: str | None = None,
    overrides: dict[str, Any] | None = None,
    progress: bool = False,
    format: str = "hdf5",
    replay_out: str | Path | None = None,
) -> OfflineDataset:
    """Build one of D4RL's datasets (see the module docstring) and write it to `out` (`write_dataset`).

    Args:
        kind: "random", "medium", "medium-replay", "expert" or "medium-expert".
        out: the HDF5 file (or, format "minari", the directory) to write; it must not exist, nor the run
            directories of the SACs trained for it (`sac_run_dir`).
        steps: transitions to collect (medium-expert: the medium policy's first half, the expert's the
            rest); medium-replay takes none: its size is where its SAC stops.
        env_id: the environment (default: the expert policy's).
        policy: run directory (or checkpoint) of a trained agent, the expert of expert and medium-expert
            (default: a SAC trained here for `train_steps`, whose best checkpoint acts).
        target_return: the evaluation return at which a medium SAC stops (medium kinds).
        expert_return: the expert return that sets the medium target instead (see the module docstring).
        train_steps: environment steps of each SAC trained here (default: its preset's total_steps).
        seed: seeds the SACs, the environments and the random actions.
        preset, overrides: the SACs' preset and further hyperparameters (--set), e.g. {"eval_freq": 5000}.
        progress: show the SACs' progress bars.
        format: "hdf5" or "minari".
        replay_out: kind "medium" only: also write the medium-replay dataset, the same SAC's replay buffer, there
            (in `format`), so that one SAC makes both, as D4RL's did; `out` is written last.
    Returns:
        the dataset written, attrs as the module docstring lists, with env_id, kind, behavioral_policy (run
        directories, or "uniform random"), algo, seed and acrl_version.
    Raises:
        InputError, before any work: an unknown kind or format; an existing `out` or run directory; steps
            missing, given for medium-replay, or < 1; a flag the kind does not take (policy, target_return,
            expert_return, train_steps, preset, overrides); both target_return and expert_return; no
            environment; a policy of another environment; a medium target that cannot be set (no expert
            return: not a D4RL task); a SAC to train on an action space that is not a Box. After training: a
            medium SAC that never reached its target (its run directory removed, nothing written); replay_out
            for a kind other than medium, or the same as `out`, or existing.
    """
    if kind not in D4RL_KINDS:
        raise InputError(f"unknown D4RL dataset kind {kind!r}; choose one of {', '.join(D4RL_KINDS)}.")
    out = check_out(out, format)
    if replay_out is not None:
        if kind != "medium":
            raise InputError(
                f"--replay-out writes medium-replay beside medium, from the same SAC: --kind medium, not {kind}."
            )
        replay_out = check_out(replay_out, format)
        if replay_out == out:
            raise InputError(f"--replay-out and the dataset are both {out}: give the medium-replay file its own name.")
    if kind == "medium-replay":
        if steps is not None:
            raise InputError(
                "--kind medium-replay holds its SAC's transitions up to where it stops (at most --train-steps): "
                "drop --steps."
            )
    elif steps is None:
        raise InputError(f"--kind {kind} needs --steps N, the transitions to collect.")
    else:
        check_steps("--steps", steps)
    if train_steps is not None:
        check_steps("--train-steps", train_steps)
    if policy is not None and kind not in ("expert", "medium-expert"):
        raise InputError(
            f"--policy is the expert of --kind expert and medium-expert; --kind {kind} trains its own SAC."
        )
    if kind not in MEDIUM_KINDS and (target_return is not None or expert_return is not None):
        raise InputError(
            "--target-return and --expert-return set where a medium SAC stops: medium, medium-replay, medium-expert."
        )
    if target_return is not None and expert_return is not None:
        raise InputError(
            "give --target-return R (the evaluation return to stop at) or --expert-return R (stop a third of the way "
            "from the random return to R), not both."
        )
    roles = [role for role in ("expert", "medium") if _trains(kind, role, policy)]
    if not roles and (train_steps is not None or overrides or preset is not None):
        why = "it takes uniformly random actions" if kind == "random" else "its expert is --policy"
        raise InputError(
            f"--train-steps, --set and --preset configure a SAC trained here; --kind {kind} trains none: {why}."
        )
    expert = None if policy is None else load_policy(policy)
    if expert is not None:
        if env_id is not None and env_id != expert.config.env_id:
            raise InputError(
                f"the policy in {policy} was trained on {expert.config.env_id}, not {env_id}; drop --env or pass a "
                "policy of that environment."
            )
        env_id = expert.config.env_id
    if env_id is None:
        raise InputError(f"--kind {kind} needs --env ENV_ID (for example --env Hopper-v5).")
    if kind in ("medium", "medium-replay"):
        medium_target(env_id, 0.0, target_return, expert_return)  # before any work: refused when it cannot be set
    action_space = _action_space(env_id)
    if roles and not isinstance(action_space, gym.spaces.Box):
        raise InputError(f"--kind {kind} trains a SAC, which needs a Box action space; {env_id}'s is {action_space}.")
    for role in roles:
        check_run_dir_free(sac_run_dir(out, role))
    check_format(format, env_factory(env_id)[0])

    attrs: dict[str, Any] = {"env_id": env_id, "kind": kind, "seed": int(seed), "acrl_version": __version__}
    attrs["random_return"] = random_return = policy_return(UniformRandom(action_space, seed), env_id, seed)

    def train_sac(role: str, target: float | None) -> TrainedSAC:
        """A SAC trained in `sac_run_dir(out, role)`, stopping at `target` (None: its whole budget); its run dir."""
        values, run_dir = {"target_return": target}, sac_run_dir(out, role)
        label = f"SAC {role}"
        agent = train_behavioral("sac", run_dir, env_id, train_steps, seed, preset, overrides, values, progress, label)
        return agent, run_dir

    if kind == "random":
        data = _random_data(env_id, int(steps), seed)
        attrs |= {"policy_return": random_return, "behavioral_policy": "uniform random", "algo": "uniform random"}
        recipe = f"uniformly random actions ({random_return:.1f} per episode)"
    elif kind == "expert":
        expert, expert_dir = _expert(expert, policy, train_sac)
        data = _policy_data(expert, int(steps), seed)
        attrs["policy_return"] = attrs["expert_return"] = policy_return(expert, env_id, seed)
        attrs |= {"behavioral_policy": expert_dir, "algo": expert.algo}
        recipe = f"the expert {expert.algo} in {expert_dir} ({attrs['expert_return']:.1f} per episode)"
    else:
        if kind == "medium-expert":
            expert, expert_dir = _expert(expert, policy, train_sac)
            attrs["expert_return"] = policy_return(expert, env_id, seed)
        target, why = medium_target(env_id, random_return, target_return, expert_return, attrs.get("expert_return"))
        medium, medium_dir = _medium(target, train_sac)
        stop = medium.best_eval
        attrs |= {"target_return": target, "stop_step": int(stop["step"]), "stop_return": float(stop["return_mean"])}
        attrs["medium_return"] = policy_return(medium, env_id, seed)
        recipe = (
            f"SAC trained here until its evaluation return {stop['return_mean']:.1f} reached {target:.1f} ({why}) at "
            f"step {stop['step']:,} ({attrs['medium_return']:.1f} per episode sampling)"
        )
        medium_attrs = {"policy_return": attrs["medium_return"], "behavioral_policy": medium_dir, "algo": "sac"}
        if kind == "medium-replay" or replay_out is not None:
            replay = buffer_dataset(medium, "medium-replay", medium_dir, seed)
            replay_recipe = f"the replay buffer of a {recipe}"
        if kind == "medium-replay":
            data, recipe = replay, replay_recipe
            attrs |= medium_attrs
        elif kind == "medium":
            if replay_out is not None:  # the same SAC's buffer, written first: `out` last, as the job's mark of done
                replay.attrs = attrs | medium_attrs | {"kind": "medium-replay"}
                replay.attrs["recipe"] = f"D4RL's medium-replay (Fu et al. 2020, Sec. 5) on {env_id}: {replay_recipe}."
                write_dataset(replay_out, replay, format)
            data = _policy_data(medium, int(steps), seed)
            attrs |= medium_attrs
            recipe = f"the policy of a {recipe}"
        else:
            half = int(steps) // 2
            data = _joined(_policy_data(medium, half, seed), _policy_data(expert, int(steps) - half, seed + 1))
            attrs |= {"behavioral_policy": f"medium: {medium_dir}; expert: {expert_dir}", "algo": f"sac, {expert.algo}"}
            recipe = (
                f"{half} transitions of the policy of a {recipe}, then {int(steps) - half} of the expert {expert.algo} "
                f"in {expert_dir} ({attrs['expert_return']:.1f} per episode)"
            )
    data.attrs = attrs | {"recipe": f"D4RL's {kind} (Fu et al. 2020, Sec. 5) on {env_id}: {recipe}."}
    write_dataset(out, data, format)
    return data


def _trains(kind: str, role: str, policy: Any) -> bool:
    """Whether `kind` trains a SAC here for `role` ("medium" or "expert")."""
    if role == "medium":
        return kind in MEDIUM_KINDS
    return kind in ("expert", "medium-expert") and policy is None


def _action_space(env_id: str) -> gym.Space:
    env = env_factory(env_id)[0]()
    space = env.action_space
    env.close()
    return space


def _random_data(env_id: str, steps: int, seed: int) -> OfflineDataset:
    """`steps` transitions of uniformly random actions (`collect_transitions` with random_prob 1)."""
    env = CheckFinite(env_factory(env_id)[0]())
    space = env.action_space
    data = collect_transitions(env, lambda obs: np.zeros(space.shape, space.dtype), steps, seed, random_prob=1.0)
    env.close()
    return data


def _policy_data(agent: Any, steps: int, seed: int) -> OfflineDataset:
    """`steps` transitions of `agent` sampling its actions (no added noise), torch's generator seeded on a
    forked state."""
    env = CheckFinite(env_factory(agent.env)[0]())  # no NaN goes into a dataset
    actor = EpisodeActor(agent, deterministic=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        data = collect_transitions(env, actor, steps, seed, episode_start=actor.reset)
    env.close()
    return data


def _joined(first: OfflineDataset, second: OfflineDataset) -> OfflineDataset:
    """`first`'s rows, then `second`'s."""
    return OfflineDataset(**{key: np.concatenate([getattr(first, key), getattr(second, key)]) for key in D4RL_KEYS})


def _expert(expert: Any, policy: Any, train_sac: Callable[[str, float | None], TrainedSAC]) -> tuple[Any, str]:
    """The expert and its run directory: `policy`'s, or a SAC trained here for its whole budget, whose best
    checkpoint acts."""
    if expert is not None:
        return expert, str(policy)
    _, run_dir = train_sac("expert", None)
    return load_policy(run_dir), str(run_dir)


def _medium(target: float, train_sac: Callable[[str, float | None], TrainedSAC]) -> tuple[OffPolicyAgent, str]:
    """A SAC trained until an evaluation reaches `target`; refused (its run directory removed) when none does."""
    agent, run_dir = train_sac("medium", target)
    best = agent.best_eval
    if best is None or best["return_mean"] < target:
        shutil.rmtree(run_dir, ignore_errors=True)
        got = "no evaluation" if best is None else f"best {best['return_mean']:.1f} at step {best['step']:,}"
        raise InputError(
            f"the medium SAC never reached its target return {target:.1f} within its {agent.total_steps:,} steps "
            f"({got}); nothing was written. Train longer (--train-steps N) or stop lower (--target-return R)."
        )
    return agent, str(run_dir)
