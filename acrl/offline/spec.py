"""The offline experiments as data: one `ExperimentSpec` per experiment, and the checks made from it.

An experiment (Fujimoto, Meger, Precup 2019, "Off-Policy Deep Reinforcement Learning without
Exploration", Sec. 3 and 5, Figure 2; Fujimoto, Conti, Ghavamzadeh, Pineau 2019, "Benchmarking Batch
Deep Reinforcement Learning Algorithms", Sec. 5) is a behavioral agent, the buffers it leaves, and the
learners that train on each buffer. A spec says which: the behavioral algorithm, the buffers (in the
order of the table's columns), the learners (`Learner`: a registry name of `acrl.algos.ALGORITHMS`, a
label, the fields the paper sets beneath the user's), the settings a user may give and their defaults
per environment (the behavioral agent's and the first learner's presets), and the texts of its table.
`acrl.offline.jobs.run_experiment` runs any spec; `acrl.offline.report` draws any spec's results.

The buffers (the paper's Sec. 5):

- final: every transition of a behavioral agent trained online, a run of its own (extrapolation: DDPG
  with N(0, final_noise) exploration, "for high exploration"; discrete: DQN, epsilon-greedy).
- concurrent: the learners learn from the behavioral DDPG's buffer as it grows, never acting
  (`acrl.offline.concurrent.run_concurrent`).
- imitation: the behavioral agent's best checkpoint (the `policy` buffer's behavioral run) acting
  without noise; imperfect: the same with noise and random actions (`acrl.offline.collect`).

An experiment on D4RL's datasets (`ExperimentSpec.d4rl`, Fu et al. 2020, Sec. 5) has D4RL's kinds as its
buffers, chosen per run (`with_buffers`), each built by `acrl.offline.d4rl.collect_d4rl`, and reports
D4RL's normalised score.

Adding an offline algorithm to an experiment's tables is one `Learner` line in its spec. This module
imports no torch (the CLI reads the specs to build its options); the configs are built through the
registry (`acrl.algos.make_config`) and validated without building a network.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from acrl.core.config import RunConfig
from acrl.core.errors import InputError

ITERATION_STEPS = 1_000
"""Behavioral steps per round of a concurrent run (and its learners' updates): one metrics row each."""

DQN_ACTION_BINS = 10
"""Sub-actions per action dimension of the continuous experiments' DQN, the paper's (Fujimoto et al. 2019,
Supp. D); `--dqn-set action_bins=N` changes it."""

IMPERFECT_EPSILON = 0.2
"""Epsilon of the discrete imperfect buffer's epsilon-greedy behavioral policy (Fujimoto et al. 2019b, Sec. 5;
`rand_action_p` of the authors' discrete_BCQ/main.py)."""

COUNTS = ("steps_behavioral", "updates", "dataset_size", "eval_freq", "eval_episodes")
"""The settings that are counts (integers >= 1)."""

DATASET_SEED = 0
"""The seed of a D4RL experiment's datasets (its SACs, environments and random actions): one dataset per kind,
which every seed's learners train on, as D4RL publishes one per task and kind."""

DEFAULTS = {"final_noise": 0.5, "eval_episodes": 10}
"""The settings' defaults that no preset gives: the paper's N(0, 0.5) exploration of the final buffer's DDPG,
and its 10 evaluation episodes."""


@dataclass(frozen=True)
class Learner:
    """An agent that learns from each buffer of an experiment, never acting but to be evaluated.

    Attributes:
        name: its key in the results, the tables and the run directories (s{seed}/BUFFER/NAME).
        label: its row in the tables and its legend entry in the figures.
        algo: its algorithm, a name of `acrl.algos.ALGORITHMS` (default: `name`).
        option: the name of its overrides: OPTION_overrides in experiment.yaml, --OPTION-set (default: `name`).
        values: config fields beneath the user's overrides (and above the env's preset): the paper's settings.
        same_gamma: take the first learner's discount (its config's gamma), beneath the overrides: the paper's
            "same data, same settings" baseline.
        seed_offset: its seed in a concurrent run is the behavioral agent's + this (one process, a stream
            each); its offline runs take the seed itself.
        cost: a rank of its update's time: the jobs of the costliest learners start first and the short ones
            then fill the gaps.
        color: its colour in the figures.
        note: a sentence under the tables when it is in them.
    """

    name: str
    label: str
    algo: str = ""
    option: str = ""
    values: Mapping[str, Any] = field(default_factory=dict)
    same_gamma: bool = False
    seed_offset: int = 0
    cost: int = 0
    color: str = "tab:gray"
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "algo", self.algo or self.name)
        object.__setattr__(self, "option", self.option or self.name)


@dataclass(frozen=True)
class ExperimentSpec:
    """One offline experiment as data (see the module docstring).

    Attributes:
        name: the experiment (`acrl experiment NAME`); its files NAME.json, NAME.md, NAME.png.
        behavioral: the behavioral agent's algorithm, a name of `acrl.algos.ALGORITHMS`.
        buffers: its buffers, the tables' columns: of "final", "concurrent", "imitation", "imperfect".
        learners: the learners, in the tables' order; the first one's presets give the default budgets and
            its gamma is the one the `same_gamma` learners take.
        settings: the settings a user gives, in experiment.yaml's order: of steps_behavioral, updates,
            dataset_size, final_noise (the final buffer's exploration noise), eval_freq, eval_episodes.
        action_space: the action space class its agents act in (`gymnasium.spaces.Box`, bounded, or `Discrete`).
        hint: the sentence that names the experiment for the other action space.
        title, setup, notes: the table's heading, settings line and notes, `str.format`ted with the summary's
            keys and {learners} (the labels of the learners it holds).
        images: its agents take image observations.
        policy: the buffer whose behavioral run's best checkpoint collects imitation and imperfect.
        collect: `acrl.offline.collect.collect_dataset` keywords per buffer, beyond its defaults.
        constants: fixed values its summary records (after the settings).
        libraries: the libraries whose versions its summary's meta records.
        d4rl: its buffers are D4RL's dataset kinds (`acrl.offline.d4rl.D4RL_KINDS`; `buffers` the default, a run
            chooses with `with_buffers`), each built once, with seed `DATASET_SEED`, by `collect_d4rl` (the
            behavioral agent is its SAC), and its tables give D4RL's normalised score
            (`acrl.offline.d4rl.normalized_score`) rather than returns.
    """

    name: str
    behavioral: str
    buffers: tuple[str, ...]
    learners: tuple[Learner, ...]
    settings: tuple[str, ...]
    action_space: type
    hint: str
    title: str
    setup: str
    notes: str
    images: bool = False
    policy: str = "concurrent"
    collect: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    constants: Mapping[str, Any] = field(default_factory=dict)
    libraries: tuple[str, ...] = ("h5py",)
    d4rl: bool = False

    @property
    def names(self) -> tuple[str, ...]:
        """The learners' names, in the tables' order."""
        return tuple(learner.name for learner in self.learners)

    @property
    def options(self) -> tuple[str, ...]:
        """The overrides' names of experiment.yaml and the summaries: behavioral_overrides, then each learner's."""
        return ("behavioral_overrides", *(f"{learner.option}_overrides" for learner in self.learners))

    def learner(self, name: str) -> Learner:
        """The learner called `name` (a KeyError for another)."""
        return next(learner for learner in self.learners if learner.name == name)

    def with_buffers(self, buffers: Sequence[str]) -> ExperimentSpec:
        """This D4RL experiment (`d4rl`) on the dataset kinds `buffers`, in D4RL's order.

        Raises:
            InputError: an experiment whose buffers are fixed; no kind, an unknown one or one named twice.
        """
        from acrl.offline.d4rl import D4RL_KINDS  # imports torch, which the CLI's specs do not need

        if not self.d4rl:
            raise InputError(f"the {self.name} experiment's buffers are fixed ({', '.join(self.buffers)}).")
        if not buffers or any(kind not in D4RL_KINDS for kind in buffers) or len(set(buffers)) < len(buffers):
            raise InputError(f"--kinds must be one or more of {', '.join(D4RL_KINDS)}, each once; got {list(buffers)}.")
        return dataclasses.replace(self, buffers=tuple(kind for kind in D4RL_KINDS if kind in buffers))

    def check_learners(self, learners: Sequence[str]) -> list[str]:
        """`learners` in the tables' order.

        Raises:
            InputError: an empty subset, one that names a learner twice or one the experiment does not have.
        """
        unknown = [name for name in learners if name not in self.names]
        if unknown or not learners or len(set(learners)) < len(learners):
            raise InputError(
                f"learners must be one or more of {', '.join(self.names)}, each once; got {list(learners)}."
            )
        return [name for name in self.names if name in learners]

    def resolve(self, env_id: str, given: Mapping[str, Any]) -> dict[str, Any]:
        """The settings of `self.settings` in their order: `given`'s where not None, else the default for
        `env_id`: steps_behavioral the behavioral agent's preset total_steps, updates and eval_freq the first
        learner's preset total_steps and eval_freq (the configs' defaults without a preset), dataset_size
        steps_behavioral (the final buffer's size, as in the paper), final_noise and eval_episodes `DEFAULTS`,
        target_return and expert_return None (`check_d4rl_returns`).

        Raises:
            InputError: a setting this experiment does not take; a budget below 1; a negative final_noise; the
                returns of a D4RL experiment that `check_d4rl_returns` refuses.
        """
        unknown = [key for key, value in given.items() if key not in self.settings and value is not None]
        if unknown:
            raise InputError(f"the {self.name} experiment takes {', '.join(self.settings)}; not {', '.join(unknown)}.")
        behavioral, reference = (_preset_config(algo, env_id) for algo in (self.behavioral, self.learners[0].algo))
        values = {**DEFAULTS, **{k: v for k, v in given.items() if v is not None}}
        values.setdefault("steps_behavioral", behavioral.total_steps)
        defaults = {
            "updates": reference.total_steps,
            "eval_freq": reference.eval_freq,
            "dataset_size": values["steps_behavioral"],
        }
        settings = {key: values.get(key, defaults.get(key)) for key in self.settings}
        counts = {key: int(value) for key, value in settings.items() if key in COUNTS}
        if min(counts.values()) < 1:
            raise InputError(f"{', '.join(counts)} must be >= 1, got {', '.join(map(str, counts.values()))}.")
        if "final_noise" in settings and not settings["final_noise"] >= 0:
            raise InputError(
                f"--final-noise must be >= 0 (a std as a fraction of max_action), got {settings['final_noise']}."
            )
        if self.d4rl:
            check_d4rl_returns(env_id, settings["target_return"], settings["expert_return"])
        return {**settings, **counts}

    def overrides(self, given: Mapping[str, Mapping[str, Any] | None] | None) -> dict[str, dict[str, Any]]:
        """{name: config fields} for each of `self.options`, {} where `given` has none.

        Raises:
            InputError: a name that is not one of `self.options`.
        """
        unknown = [key for key in given or {} if key not in self.options]
        if unknown:
            raise InputError(f"the {self.name} experiment's overrides are {', '.join(self.options)}; not {unknown}.")
        return {key: dict((given or {}).get(key) or {}) for key in self.options}

    def learner_values(
        self, learner: Learner, overrides: Mapping[str, Mapping[str, Any]], gamma: float | None
    ) -> dict[str, Any]:
        """The config fields `learner` trains with above its preset: its `values`, the first learner's `gamma`
        where it takes the same, then the user's overrides."""
        same = {"gamma": gamma} if learner.same_gamma else {}
        return {**learner.values, **same, **overrides[f"{learner.option}_overrides"]}

    def offline_values(
        self, learner: Learner, settings: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]], gamma: float
    ) -> dict[str, Any]:
        """The config fields of `learner`'s offline runs above its preset: latest.pt at every evaluation
        (checkpoint_freq eval_freq, unless its fields say otherwise), `learner_values`, eval_freq and
        eval_episodes."""
        common = {"eval_freq": settings["eval_freq"], "eval_episodes": settings["eval_episodes"]}
        return {"checkpoint_freq": settings["eval_freq"], **self.learner_values(learner, overrides, gamma), **common}

    def check_configs(
        self, env_id: str, settings: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]], seed: int
    ) -> tuple[RunConfig, float]:
        """Validate, without building a network, every config the experiment's jobs build for `seed`: the
        concurrent run's (`concurrent_configs`) where it has the concurrent buffer, else the behavioral
        agent's, and the offline runs' of each learner where it has datasets (`offline_values`; the jobs'
        `acrl.sweep.grid.train_run` builds them from the same values).

        Returns:
            the behavioral agent's config and the first learner's gamma, which the `same_gamma` learners take.
        Raises:
            InputError: a bad override, named with its option (e.g. "--bcq-set (bcq): lmbda ...").
        """
        common = {"eval_freq": settings["eval_freq"], "eval_episodes": settings["eval_episodes"]}
        if "concurrent" in self.buffers:
            configs = self.concurrent_configs(env_id, settings, overrides, seed, "final.h5")
            behavioral, gamma = configs["behavioral"], configs[self.learners[0].name].gamma
        else:
            total = settings["steps_behavioral"]
            behavioral, gamma = self.behavioral_config(env_id, overrides, seed=seed, total_steps=total, **common), None
        if "updates" in settings:
            fixed = {"seed": seed, "total_steps": settings["updates"], "dataset": "final.h5"}
            for learner in self.learners:  # the first one first: its gamma is the one the others take
                values = self.offline_values(learner, settings, overrides, gamma)
                config = self.learner_config(learner, env_id, values, **fixed)
                gamma = config.gamma if gamma is None else gamma
        return behavioral, gamma

    def learner_config(self, learner: Learner, env_id: str, values: Mapping[str, Any], **fixed: Any) -> RunConfig:
        """`learner`'s validated config (`acrl.algos.make_config`: defaults < env preset < `values` < `fixed`),
        without building a network.

        Raises:
            InputError: a bad value, named with its option (e.g. "--bcq-set (bcq): lmbda ...").
        """
        from acrl.algos import make_config

        origin = f"--{learner.option.replace('_', '-')}-set"
        return make_config(learner.algo, env_id, None, dict(values), origin, **fixed)[1]

    def behavioral_config(self, env_id: str, overrides: Mapping[str, Mapping[str, Any]], **fixed: Any) -> RunConfig:
        """The behavioral agent's validated config (defaults < env preset < --behavioral-set < `fixed`).

        Raises:
            InputError: a bad value, named with --behavioral-set.
        """
        from acrl.algos import make_config

        values = dict(overrides["behavioral_overrides"])
        return make_config(self.behavioral, env_id, None, values, "--behavioral-set", **fixed)[1]

    def concurrent_configs(
        self,
        env_id: str,
        settings: Mapping[str, Any],
        overrides: Mapping[str, Mapping[str, Any]],
        seed: int,
        final_dataset: str,
    ) -> dict[str, RunConfig]:
        """The validated configs of a concurrent run of `seed` (`acrl.offline.concurrent.run_concurrent`):
        "behavioral", training online for steps_behavioral steps with a replay buffer that keeps every
        transition (checkpointed with it), and each learner by name, learning one update per behavioral step
        (seed + its `seed_offset`), recording `final_dataset`, where the buffer is written at the end. All
        evaluate every eval_freq steps and write latest.pt there (checkpoint_freq), in rounds of
        `ITERATION_STEPS`. No network is built.

        Raises:
            InputError: a bad override (named with its option).
        """
        steps = settings["steps_behavioral"]
        common = {
            "eval_freq": settings["eval_freq"],
            "eval_episodes": settings["eval_episodes"],
            "iteration_steps": ITERATION_STEPS,
            "checkpoint_freq": settings["eval_freq"],
        }
        from acrl.core.config import update_config

        behavioral = self.behavioral_config(
            env_id, overrides, seed=seed, total_steps=steps, save_replay_buffer=True, **common
        )
        size = max(steps, behavioral.start_steps, behavioral.batch_size)
        configs = {"behavioral": update_config(behavioral, {"buffer_size": size}, "experiment")}
        gamma = None  # the first learner's, once built: the one the `same_gamma` learners take
        for learner in self.learners:
            values = self.learner_values(learner, overrides, gamma)
            fixed = {"seed": seed + learner.seed_offset, "total_steps": steps, "dataset": final_dataset, **common}
            configs[learner.name] = self.learner_config(learner, env_id, values, **fixed)
            gamma = configs[learner.name].gamma if gamma is None else gamma
        return configs

    def check_env(self, env_id: str) -> None:
        """The environment's spaces as the experiment's agents need them, before any work: a flat Box
        observation (or image frames, for an experiment that takes them) and an action space of
        `action_space` (a 1-D Box with finite bounds, or Discrete).

        Raises:
            InputError: an unknown environment; another action space, naming the experiment for it; an
                unbounded Box.
        """
        from acrl.core.envs import check_spaces, env_factory, require_finite_bounds

        agents = f"the {self.name} experiment ({', '.join(learner.label for learner in self.learners)})"
        probe = env_factory(env_id)[0]()
        try:
            check_spaces(probe, agents, (self.action_space,), self.hint, images=self.images)
            if isinstance(probe.action_space, gym.spaces.Box):
                require_finite_bounds(probe.action_space, agents)
        finally:
            probe.close()


def check_d4rl_returns(env_id: str, target_return: float | None, expert_return: float | None) -> None:
    """Before any work, that a D4RL experiment on `env_id` can stop its medium SAC and normalise its scores:
    on one of D4RL's tasks with D4RL's references (`acrl.offline.d4rl.D4RL_REFERENCE_RETURNS`), which set both
    unless `target_return` is given; on another with `expert_return`, the expert end of its normalised score
    (its random end is the random return each dataset measures) and, without `target_return`, where the medium
    SAC stops (a third of the way from the random return to it, `acrl.offline.d4rl.medium_target`).

    Raises:
        InputError: `expert_return` on one of D4RL's tasks (its scores use D4RL's references); no `expert_return`
            on another task.
    """
    from acrl.offline.d4rl import D4RL_REFERENCE_RETURNS  # imports torch, which the CLI's specs do not need

    task = env_id.split("-v")[0]
    if task in D4RL_REFERENCE_RETURNS and expert_return is not None:
        raise InputError(
            f"{env_id} is one of D4RL's tasks: its normalised scores and the medium SAC's stop use D4RL's reference "
            "returns; drop --expert-return (--target-return R stops the medium SAC elsewhere)."
        )
    if task not in D4RL_REFERENCE_RETURNS and expert_return is None:
        raise InputError(
            f"{env_id} is not one of D4RL's tasks ({', '.join(D4RL_REFERENCE_RETURNS)}): give --expert-return R, the "
            "return its normalised score calls 100 (the random return is measured here)."
        )


def _preset_config(algo: str, env_id: str) -> RunConfig:
    """`algo`'s config with the env's default preset applied (not validated: the defaults it gives are read)."""
    from acrl.algos import get_algorithm
    from acrl.core.config import preset_values, update_config

    return update_config(get_algorithm(algo).config_class(), preset_values(algo, env_id, None)[0], f"{algo} preset")


CONTINUOUS_LEARNERS = (
    Learner("bcq", "BCQ", seed_offset=2, cost=4, color="tab:red"),
    Learner("ddpg", "DDPG (off-policy)", same_gamma=True, seed_offset=1, cost=2, color="tab:blue"),
    Learner("bc", "BC", seed_offset=3, color="tab:green"),
    Learner("vae_bc", "VAE-BC", seed_offset=4, cost=3, color="tab:purple"),
    Learner(
        "dqn",
        "DQN (discretised)",
        values={"action_bins": DQN_ACTION_BINS},
        same_gamma=True,
        seed_offset=5,
        cost=1,
        color="tab:orange",
        note=f"DQN: each action dimension discretised independently into {DQN_ACTION_BINS} sub-actions unless "
        "--dqn-set action_bins says otherwise (the paper's Supp. D).",
    ),
)
"""The learners of the BCQ paper's Figure 2: BCQ, offline DDPG (BCQ's gamma), behavioral cloning, VAE-BC
(BCQ's VAE alone) and DQN on independently discretised actions (BCQ's gamma)."""

CONTINUOUS = {
    "behavioral": "ddpg",
    "learners": CONTINUOUS_LEARNERS,
    "action_space": gym.spaces.Box,
    "hint": "For a Discrete action space run `acrl experiment discrete`.",
    "libraries": ("h5py", "mujoco"),
}
"""What the two continuous experiments share: a behavioral DDPG and the paper's learners."""

EXTRAPOLATION = ExperimentSpec(
    name="extrapolation",
    buffers=("final", "concurrent", "imitation", "imperfect"),
    settings=("steps_behavioral", "updates", "dataset_size", "final_noise", "eval_freq", "eval_episodes"),
    title="{learners} on {env_id} (Fujimoto et al. 2019, Figure 2)",
    setup="Seeds {seeds}; behavioral DDPG {steps_behavioral} steps (final buffer: N(0, {final_noise}) exploration); "
    "imitation/imperfect {dataset_size} transitions; {updates} updates per offline agent (concurrent: one per "
    "behavioral step); evaluation: {eval_episodes} deterministic episodes every {eval_freq}.",
    notes="behavioral policy: the noise-free DDPG (final, concurrent: each behavioral run at its end; imitation, "
    "imperfect: the concurrent run's best checkpoint, which collected them). dataset episodes: mean return of the "
    "complete episodes stored in the buffer. final: last evaluation.",
    **CONTINUOUS,
)
"""The BCQ paper's Figure 2 (`acrl experiment extrapolation`): the learners on the four buffers of one behavioral
DDPG, the final buffer's own DDPG exploring with N(0, final_noise), imitation and imperfect collected by the
concurrent run's best checkpoint."""

CONCURRENT = ExperimentSpec(
    name="concurrent",
    buffers=("concurrent",),
    settings=("steps_behavioral", "eval_freq", "eval_episodes"),
    title="Concurrent learning: {learners} on {env_id} (Fujimoto et al. 2019, Figure 2)",
    setup="Seeds {seeds}; behavioral DDPG {steps_behavioral} steps, one update per step for each learner; "
    "evaluation: {eval_episodes} deterministic episodes every {eval_freq}.",
    notes="behavioral policy: the noise-free DDPG at the end of its run. dataset episodes: mean return of the "
    "complete episodes in its buffer. final: last evaluation.",
    **CONTINUOUS,
)
"""The concurrent column of Figure 2 alone (`acrl experiment concurrent`): the learners learn from the behavioral
DDPG's buffer as it grows."""

DISCRETE = ExperimentSpec(
    name="discrete",
    behavioral="dqn",
    buffers=("final", "imperfect"),
    learners=(
        Learner("discrete_bcq", "discrete BCQ", option="bcq", color="tab:red"),
        Learner("dqn", "DQN (offline)", same_gamma=True, color="tab:orange"),
        Learner("bc", "BC", algo="discrete_bc", color="tab:green"),
        Learner("discrete_cql", "discrete CQL", option="cql", color="tab:brown"),
    ),
    settings=("steps_behavioral", "updates", "dataset_size", "eval_freq", "eval_episodes"),
    action_space=gym.spaces.Discrete,
    hint="For continuous actions run `acrl experiment extrapolation` (BCQ, DDPG, BC, VAE-BC and a discretised DQN).",
    title="{learners} on {env_id} (Fujimoto et al. 2019b, Sec. 5)",
    setup="Seeds {seeds}; behavioral DQN {steps_behavioral} steps (final buffer: its whole replay); imperfect: "
    "{dataset_size} transitions of its best checkpoint at epsilon {imperfect_epsilon}; {updates} updates per "
    "offline agent; evaluation: {eval_episodes} greedy episodes every {eval_freq}.",
    notes="behavioral policy: the greedy DQN (final: the behavioral run at its end; imperfect: its best checkpoint, "
    "which collected the data at epsilon {imperfect_epsilon}). dataset episodes: mean return of the complete "
    "episodes stored in the buffer (the behavioral policy as it acted). final: last evaluation.",
    images=True,
    policy="final",
    collect={"imperfect": {"noise_std": 0.0, "random_prob": IMPERFECT_EPSILON}},
    constants={"imperfect_epsilon": IMPERFECT_EPSILON},
    libraries=("h5py", "minatar"),
)
"""Fujimoto et al. 2019b, Sec. 5 (`acrl experiment discrete`): discrete BCQ (its preset; the MinAtar one takes the
behavioral DQN's learning settings, as the authors give DQN and BCQ one parameter set), offline DQN (BCQ's gamma),
BC and discrete CQL (Kumar et al. 2020, Appendix F; its preset, on discrete BCQ's learning settings) on the whole
replay of a behavioral DQN (its env preset) and on its best checkpoint's epsilon-greedy data
at epsilon 0.2. The authors also play a fifth of the episodes near noise-free (`low_noise_p`); acrl leaves those
out. Its BC is `discrete_bc` (the softmax policy), kept under the name `bc` in results and options."""

D4RL = ExperimentSpec(
    name="d4rl",
    behavioral="sac",
    buffers=("medium", "medium-replay"),
    learners=(
        Learner("td3_bc", "TD3+BC", cost=1, color="tab:blue"),
        Learner("iql", "IQL", cost=2, color="tab:purple"),
        Learner("cql", "CQL", cost=4, color="tab:orange"),
        Learner("bcq", "BCQ", cost=3, color="tab:red"),
        Learner("bc", "BC", color="tab:green"),
    ),
    settings=(
        "steps_behavioral",
        "target_return",
        "expert_return",
        "dataset_size",
        "updates",
        "eval_freq",
        "eval_episodes",
    ),
    action_space=gym.spaces.Box,
    hint="For a Discrete action space run `acrl experiment discrete` (discrete BCQ, offline DQN, BC, discrete CQL).",
    title="{learners} on D4RL-style {env_id} datasets (Fu et al. 2020, Sec. 5)",
    setup="Seeds {seeds} of each learner, on one dataset per kind (seed {dataset_seed}); each SAC at most "
    "{steps_behavioral} steps; medium, expert, random: {dataset_size} transitions (medium-replay: the medium SAC's "
    "buffer where it stopped); {updates} updates per learner; evaluation: {eval_episodes} deterministic episodes every "
    "{eval_freq} updates.",
    notes="Normalised score 100 (R - R_random) / (R_expert - R_random) (Fu et al. 2020), references: {reference}. "
    "behavioral policy: the policy that collected the dataset, sampling as it collected (medium-expert: two, "
    "none given). dataset episodes: the mean return of the dataset's complete episodes, normalised. final: last "
    "evaluation.",
    constants={"dataset_seed": DATASET_SEED},
    libraries=("h5py", "mujoco"),
    d4rl=True,
)
"""D4RL's table (`acrl experiment d4rl`; Fu et al. 2020, Sec. 5, as CORL and d3rlpy report it): TD3+BC (Fujimoto
and Gu 2021), IQL (Kostrikov et al. 2022), CQL (Kumar et al. 2020), BCQ and BC, each with its preset (the papers'
D4RL locomotion settings), on D4RL's datasets built here for the environment (default medium and medium-replay),
in normalised score. TD3+BC leads: its preset gives the default budget, CORL's 1M updates with an evaluation
every 5,000. The datasets are built once per kind, not once per seed: D4RL publishes one
dataset per task and kind, and the seeds of CORL's and d3rlpy's tables vary the learner on it; building them per
seed would also multiply the SAC training, the bulk of the cost, by the seeds."""

EXPERIMENTS = {spec.name: spec for spec in (EXTRAPOLATION, CONCURRENT, DISCRETE, D4RL)}
"""The experiments by name."""
