"""A3C's pieces without processes: returns and the bootstrap choice, gradient hand-over, seeding,
config validation and the loss. Expected values are computed by hand. (The model, the one actor-critic:
tests/unit/test_actor_critic.py.)"""

import copy
import multiprocessing
import os

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from acrl.algos.a3c import (
    A3C,
    A3CConfig,
    Rollout,
    a3c_loss,
    bootstrap_value,
    collect_rollout,
)
from acrl.core.envs import ActionAdapter, LeanSyncVectorEnv
from acrl.core.errors import InputError
from acrl.parts.actor_critic import Action
from acrl.parts.normalization import IdentityNormalizer
from acrl.parts.optim import SharedAdam, flatten_parameters
from acrl.parts.returns import segment_advantages
from acrl.parts.workers import StepBudget, apply_gradients, default_workers, make_worker_envs, sync_parameters
from tests.conftest import save_format_1

TRUNCATED_RETURNS = [6.355, 5.95, 5.5]  # 1 + .9 (1 + .9 (1 + .9 * 5)), 1 + .9 (1 + .9 * 5), 1 + .9 * 5
TERMINATED_RETURNS = [2.71, 1.9, 1.0]  # 1 + .9 + .81, 1 + .9, 1


# ------------------------------------------------------------------- n-step returns and GAE
def n_step_returns(rewards, bootstrap, gamma=0.9):
    """segment_advantages' targets with lambda = 1 and V = 0: the n-step returns R_t."""
    return segment_advantages(rewards, np.zeros_like(rewards), bootstrap, gamma, 1.0)[1]


def test_n_step_returns_by_hand():
    rewards = np.array([1.0, 1.0, 1.0], dtype=np.float32)
    np.testing.assert_allclose(n_step_returns(rewards, 5.0), TRUNCATED_RETURNS, rtol=1e-6)
    np.testing.assert_allclose(n_step_returns(rewards, 0.0), TERMINATED_RETURNS, rtol=1e-6)


def test_segment_advantages_by_hand():
    rewards = np.array([1.0, 1.0, 1.0], dtype=np.float32)
    values = np.array([2.0, 1.0, 0.5], dtype=np.float32)
    # lambda = 1: A_t = R_t - V(s_t) with the n-step returns (6.355, 5.95, 5.5), targets R_t.
    advantages, targets = segment_advantages(rewards, values, 5.0, 0.9, 1.0)
    np.testing.assert_allclose(advantages, [4.355, 4.95, 5.0], rtol=1e-6)
    np.testing.assert_allclose(targets, TRUNCATED_RETURNS, rtol=1e-6)
    # lambda = 0.5: delta = (1 + .9 * 1 - 2, 1 + .9 * .5 - 1, 1 + .9 * 5 - .5) = (-0.1, 0.45, 5.0);
    # A_2 = 5.0, A_1 = 0.45 + .45 * 5.0 = 2.7, A_0 = -0.1 + .45 * 2.7 = 1.115; targets A + V.
    advantages, targets = segment_advantages(rewards, values, 5.0, 0.9, 0.5)
    np.testing.assert_allclose(advantages, [1.115, 2.7, 5.0], rtol=1e-6)
    np.testing.assert_allclose(targets, [3.115, 3.7, 5.5], rtol=1e-6)
    assert advantages.dtype == targets.dtype == np.float32
    # Two segments side by side (two environments): each column as computed alone above.
    advantages, targets = segment_advantages(
        np.stack([rewards, rewards], 1), np.stack([values, 0 * values], 1), np.array([5.0, 0.0], np.float32), 0.9, 1.0
    )
    np.testing.assert_allclose(advantages, np.stack([[4.355, 4.95, 5.0], TERMINATED_RETURNS], 1), rtol=1e-6)
    np.testing.assert_allclose(targets, np.stack([TRUNCATED_RETURNS, TERMINATED_RETURNS], 1), rtol=1e-6)


class CounterEnv(gym.Env):
    """Observation [t] (steps taken), reward 1 per step; terminates at step `terminate_at`."""

    observation_space = gym.spaces.Box(-np.inf, np.inf, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, terminate_at: int = 10**9):
        self.terminate_at, self.t = terminate_at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.t], np.float32), 1.0, self.t >= self.terminate_at, False, {}


def vector_of(*envs: gym.Env) -> tuple[LeanSyncVectorEnv, np.ndarray]:
    """The envs in a worker's vector env, reset: (envs, first observations (N, 1))."""
    vector = LeanSyncVectorEnv([lambda env=env: env for env in envs])
    return vector, vector.reset(seed=0)[0]


class StubModel:
    """V(s) = s[0] + 2, so V(last obs after 3 steps) = 5 while V(first obs) = 2; action 0; no state."""

    def act(self, obs, state, episode_start, deterministic=False, with_log_prob=True):
        return Action(torch.zeros(len(obs), dtype=torch.int64), None, state)

    def value(self, obs, state):
        return obs[:, 0] + 2.0


def collect(envs, obs, n_steps):
    """`collect_rollout` of the stub model from a fresh (empty) state."""
    adapter, starts = ActionAdapter(envs.single_action_space), torch.ones(len(obs), dtype=torch.bool)
    return collect_rollout(envs, StubModel(), obs, n_steps, adapter, IdentityNormalizer(), (), starts)


@pytest.mark.parametrize(
    "case, env, n_steps, expected",
    [
        ("truncated by a time limit", gym.wrappers.TimeLimit(CounterEnv(), max_episode_steps=3), 10, TRUNCATED_RETURNS),
        ("stopped mid-episode (t_max)", CounterEnv(), 3, TRUNCATED_RETURNS),
        ("terminated", CounterEnv(terminate_at=3), 10, TERMINATED_RETURNS),
    ],
)
def test_worker_bootstraps_from_last_obs_unless_terminated(case, env, n_steps, expected):
    envs, obs = vector_of(env)
    rollout = collect(envs, obs, n_steps)
    assert len(rollout) == 3, case
    bootstrap = bootstrap_value(rollout, StubModel(), IdentityNormalizer())
    assert bootstrap.tolist() == [0.0 if case == "terminated" else 5.0], case
    np.testing.assert_allclose(n_step_returns(rollout.rewards[:, 0], bootstrap[0]), expected, rtol=1e-6)


def test_a_rollout_of_several_envs_stops_where_one_episode_ends_and_each_bootstraps_its_own_way():
    """Env 0 terminates at step 3, env 1 runs on: a 3-step rollout of both (t_max 10); env 0
    bootstraps 0 and restarts at [0], env 1 bootstraps V([3]) = 5 and continues from [3]."""
    envs, obs = vector_of(CounterEnv(terminate_at=3), CounterEnv())
    rollout = collect(envs, obs, 10)
    assert len(rollout) == 3 and rollout.observations.shape == (3, 2, 1) and rollout.actions.shape == (3, 2)
    assert rollout.terminated.tolist() == [True, False] and rollout.truncated.tolist() == [False, False]
    assert rollout.last_obs.tolist() == [[3.0], [3.0]] and rollout.next_obs.tolist() == [[0.0], [3.0]]
    assert rollout.episode_returns.tolist() == [3.0] and rollout.episode_lengths.tolist() == [3]
    bootstrap = bootstrap_value(rollout, StubModel(), IdentityNormalizer())
    assert bootstrap.tolist() == [0.0, 5.0]
    returns = segment_advantages(rollout.rewards, np.zeros_like(rollout.rewards), bootstrap, 0.9, 1.0)[1]
    np.testing.assert_allclose(returns, np.stack([TERMINATED_RETURNS, TRUNCATED_RETURNS], 1), rtol=1e-6)


def step_budget(total: int, start: int = 0) -> StepBudget:
    """A budget of `total` steps for one worker, this process's own (its parent is ours)."""
    return StepBudget(multiprocessing.get_context("fork"), 1, start, total, parent_pid=os.getppid())


def test_workers_claim_the_budget_a_rollout_at_a_time_and_give_back_what_an_episode_end_left():
    """Budget 12, t_max 5: claims of 5, 5, then the 2 left; an episode that ends after 3 of its
    5 steps gives 2 back, which the next claim takes; the steps taken are counted apart from
    the claims; a stop grants nothing."""
    budget = step_budget(12)
    assert [budget.claim(5) for _ in range(2)] == [5, 5]
    envs, obs = vector_of(CounterEnv(terminate_at=3))
    rollout = collect(envs, obs, 5)
    assert len(rollout) == 3 and rollout.terminated.tolist() == [True]
    budget.release(5 - len(rollout))
    budget.count_taken(0, len(rollout))
    assert budget.claimed.value == 8 and budget.steps_taken() == 3  # 5 claimed by a rollout still running
    assert [budget.claim(5), budget.claim(5)] == [4, 0]
    assert budget.claimed.value == 12
    budget = step_budget(12, start=2)
    budget.stop()
    assert budget.claim(5) == 0 and budget.claimed.value == 2 and budget.steps_taken() == 2


def test_with_several_envs_the_budget_is_claimed_in_whole_rows():
    """Budget 20, t_max 4, 3 envs: 4 rows (12 steps), then ceil(8 / 3) = 3 rows (9 steps: the
    counter ends 1 past the budget), then nothing."""
    budget = step_budget(20)
    assert [budget.claim(4, row_size=3) for _ in range(3)] == [4, 3, 0]
    assert budget.claimed.value == 21


def test_rollout_of_a_smaller_claim_stops_there():
    envs, obs = vector_of(CounterEnv())
    rollout = collect(envs, obs, 2)
    assert len(rollout) == 2 and not rollout.terminated.any() and not rollout.truncated.any()
    assert rollout.last_obs.tolist() == rollout.next_obs.tolist() == [[2.0]]
    assert rollout.observations.tolist() == [[[0.0]], [[1.0]]] and rollout.actions.tolist() == [[0], [0]]
    assert len(rollout.episode_returns) == 0


# ------------------------------------------------------------------- gradient hand-over
class RecordingAdam(SharedAdam):
    """SharedAdam that records the gradient each step receives."""

    def __init__(self, params, **kwargs):
        super().__init__(params, **kwargs)
        self.received = []

    def step(self, closure=None):
        self.received.append([p.grad.clone() for g in self.param_groups for p in g["params"]])
        return super().step(closure)


def global_and_local(module: nn.Module) -> tuple[nn.Module, torch.Tensor, nn.Module, torch.Tensor]:
    """A global model with its flat shared parameters, and a worker's local copy with flat gradients."""
    global_parameters = flatten_parameters(module)
    module.share_memory()
    local = copy.deepcopy(module)
    return module, global_parameters, local, flatten_parameters(local, gradients=True)


def test_each_global_update_receives_this_updates_gradient_only():
    """Three updates with a constant gradient: the global parameters get it each time, not g, 2g, 3g.

    Weight (1, 3) and bias (1,): d loss / d [weight, bias] = [0.5, -1, 2, 3] in the flat layout."""
    global_model, global_parameters, local, local_parameters = global_and_local(nn.Linear(3, 1))
    optimizer = RecordingAdam([global_parameters], lr=0.01)
    for _ in range(3):
        sync_parameters(local_parameters, global_parameters)
        assert torch.equal(local.weight, global_model.weight) and torch.equal(local.bias, global_model.bias)
        loss = (local.weight * torch.tensor([[0.5, -1.0, 2.0]])).sum() + 3.0 * local.bias.sum()
        apply_gradients(local_parameters, optimizer, loss, max_grad_norm=100.0)
        assert global_parameters.grad is None  # nothing left behind to accumulate into
    assert len(optimizer.received) == 3
    for (grad,) in optimizer.received:
        torch.testing.assert_close(grad, torch.tensor([0.5, -1.0, 2.0, 3.0]))
    assert optimizer.state[global_parameters]["step"].item() == 3
    assert not torch.equal(global_model.weight, local.weight)  # the last step moved the global model only


def test_hand_over_clips_the_local_gradient_norm():
    _, global_parameters, local, local_parameters = global_and_local(nn.Linear(2, 1, bias=False))
    optimizer = RecordingAdam([global_parameters])
    norm = apply_gradients(
        local_parameters, optimizer, (local.weight * torch.tensor([[3.0, 4.0]])).sum(), max_grad_norm=1.0
    )
    assert norm == pytest.approx(5.0)
    torch.testing.assert_close(optimizer.received[0][0], torch.tensor([0.6, 0.8]))


def test_checkpoints_with_per_layer_optimizer_state_load_into_the_flat_layout(tmp_path):
    """A3C checkpoints of format 1 can hold one Adam state per layer; they load as the same moments, flat."""
    agent = A3C("CartPole-v1", workers=1, optimizer="adam", seed=0)
    size = agent.parameters.numel()
    agent.optimizer.state[agent.parameters]["exp_avg"].copy_(torch.arange(size, dtype=torch.float32))
    agent.optimizer.state[agent.parameters]["step"].fill_(4.0)
    state = agent.state_dict()
    flat = state["optimizers"]["optimizer"]
    chunks = torch.arange(size, dtype=torch.float32).split([p.numel() for p in agent.model.parameters()])
    per_layer = {
        i: {"step": torch.tensor(4.0), "exp_avg": chunk.reshape(p.shape), "exp_avg_sq": torch.ones(p.shape)}
        for i, (chunk, p) in enumerate(zip(chunks, agent.model.parameters()))
    }
    old = {
        **state,
        "optimizers": {
            "optimizer": {"state": per_layer, "param_groups": [{**flat["param_groups"][0], "params": list(per_layer)}]}
        },
    }
    loaded = A3C.load(save_format_1(tmp_path / "old.pt", agent, old))
    loaded_state = loaded.optimizer.state[loaded.parameters]
    assert loaded_state["exp_avg"].tolist() == list(range(size)) and loaded_state["step"].item() == 4.0
    assert loaded_state["exp_avg_sq"].tolist() == [1.0] * size and loaded_state["exp_avg"].is_shared()
    with pytest.raises(InputError, match="checkpoint of format 1 that cannot be read"):
        A3C.load(save_format_1(tmp_path / "bad.pt", agent, {**state, "optimizers": {}}))


# ------------------------------------------------------------------- seeding
def test_workers_see_different_first_observations_that_repeat():
    first = [make_worker_envs("CartPole-v1", seed=0, rank=rank)[1][0] for rank in range(4)]
    again = [make_worker_envs(gym.spec("CartPole-v1"), seed=0, rank=rank)[1][0] for rank in range(4)]
    # Two workers of two envs each: env i of worker r is seeded as worker r * 2 + i of one env.
    np.testing.assert_array_equal(
        np.concatenate([make_worker_envs("CartPole-v1", 0, r, 2)[1] for r in (0, 1)]), np.stack(first)
    )
    for i in range(4):
        np.testing.assert_array_equal(first[i], again[i])
        for j in range(i):
            assert not np.array_equal(first[i], first[j]), (i, j)


# ------------------------------------------------------------------- config
@pytest.mark.parametrize(
    "values",
    [
        {"workers": 0},
        {"n_steps": 0},
        {"n_envs": 0},
        {"optimizer": "sgd"},
        {"start_method": "teleport"},
        {"gamma": 1.5},
        {"learning_rate": 0.0},
        {"hidden_sizes": ()},
        {"activation": "gelu"},
        {"reward_scale": 0.0},
        {"loss_reduction": "max"},
        {"anneal_steps": 0},
        {"optimizer": "adam", "rmsprop_eps_inside": True},
    ],
)
def test_config_rejects_bad_values(values):
    with pytest.raises(InputError):
        A3CConfig(**values).validate()


def test_config_defaults():
    """The defaults A3CConfig documents, against their sources: Mnih et al. 2016 (t_max 5, shared
    RMSProp, entropy 0.01); Stable-Baselines3 A2C (lr 7e-4, RMSProp alpha 0.99 and eps 1e-5,
    max_grad_norm 0.5, MlpPolicy 64-64 tanh, separate actor and critic); one worker per core."""
    import os
    import sys

    config = A3CConfig()
    config.validate()
    assert (config.n_steps, config.optimizer, config.ent_coef) == (5, "rmsprop", 0.01)
    assert (config.learning_rate, config.rmsprop_alpha, config.optimizer_eps, config.max_grad_norm) == (
        7e-4,
        0.99,
        1e-5,
        0.5,
    )
    assert (config.hidden_sizes, config.activation, config.shared_trunk) == ((64, 64), "tanh", False)
    assert config.critic_hidden_sizes is None  # the critic gets hidden_sizes too: 64-64
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert config.workers == cores
    assert config.start_method == ("fork" if sys.platform.startswith("linux") else "spawn")


def test_every_preset_loads_validates_and_cites_a_source():
    from acrl.core.config import load_presets, preset_values, update_config

    presets = load_presets("a3c")
    for env_id in ("CartPole-v1", "Pendulum-v1", "MountainCarContinuous-v0"):
        assert {"default", "original"} <= set(presets[env_id]), env_id
    assert "HalfCheetah-v5" in presets
    for env_id, by_name in presets.items():
        for name, values in by_name.items():
            assert len(values.get("source", "")) > 40, (env_id, name)
            config = update_config(A3CConfig(), preset_values("a3c", env_id, name)[0], f"{env_id}:{name}")
            config.validate()
            atari = env_id.startswith("ALE/") or env_id.endswith("NoFrameskip-v4")
            if name == "original" and not atari:  # Atari's is the paper's: test_a3c_images.py
                assert (config.gamma, config.learning_rate, config.optimizer, config.ent_coef) == (
                    0.9,
                    1e-4,
                    "adam",
                    0.005,
                )
                assert config.critic_hidden_sizes == (256,) and config.activation == "relu"
                assert config.n_steps >= gym.spec(env_id).max_episode_steps  # one update per episode


def test_the_model_cards_command_spells_out_defaults_that_depend_on_the_machine():
    """`workers` defaults to this machine's core count: a command that left it out would run
    another number of workers elsewhere, so it is written even when it equals the default."""
    from acrl.core.config import preset_values, update_config
    from acrl.core.model_card import reproduce_command

    values, _ = preset_values("a3c", "CartPole-v1", None)
    config = update_config(A3CConfig(env_id="CartPole-v1"), {**values, "preset": "default"}, "test")
    assert config.workers == default_workers()
    command = reproduce_command("a3c", config).split()
    assert f"workers={default_workers()}" in command and f"start_method={config.start_method}" in command
    assert not any(word.startswith("n_steps=") for word in command)  # the preset's own values stay implicit


# ------------------------------------------------------------------- the loss
class HandSetModel(nn.Module):
    """pi and V set by hand, state-independent policy: V(s) = w * s[0] with w = 1; discrete:
    Categorical with probabilities (3/4, 1/4) (logits (ln 3, 0)); Gaussian: N(0, 1) (mean 0, log-std 0)."""

    def __init__(self, discrete: bool):
        super().__init__()
        self.discrete = discrete
        self.w = nn.Parameter(torch.tensor(1.0))
        self.policy = nn.Parameter(torch.tensor([float(np.log(3.0)), 0.0]) if discrete else torch.zeros(2))

    def evaluate(self, obs, actions, state, episode_starts):
        """obs (T, N, 1), actions (T, N) or (T, N, 1) -> log pi, entropy, V, each (T, N)."""
        if self.discrete:
            dist = torch.distributions.Categorical(logits=self.policy.expand(*obs.shape[:2], 2))
            log_probs, entropy = dist.log_prob(actions), dist.entropy()
        else:
            mean, std = self.policy[0].expand(*obs.shape[:2], 1), self.policy[1].exp().expand(*obs.shape[:2], 1)
            dist = torch.distributions.Normal(mean, std)
            log_probs, entropy = dist.log_prob(actions).sum(-1), dist.entropy().sum(-1)
        return log_probs, entropy, self.w * obs[..., 0]


LN = {p: float(np.log(p)) for p in (0.25, 0.75)}
CATEGORICAL_ENTROPY = -(0.75 * LN[0.75] + 0.25 * LN[0.25])  # 0.5623
LOG_SQRT_2PI = float(np.log(np.sqrt(2 * np.pi)))
NORMAL_ENTROPY = 0.5 + LOG_SQRT_2PI  # 1.4189 for std 1


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("discrete", [True, False])
def test_a3c_loss_by_hand_for_a_full_and_a_one_step_rollout(discrete, reduction):
    """t_max 2, one env, gamma 0.5, vf_coef 0.25, ent_coef 0.1 (each term's sign and weight shows).

    Full rollout: s = (1, 2), rewards (1, 1), terminated: R = (1 + 0.5 * 1, 1) = (1.5, 1),
    V = (1, 2), A = (0.5, -1). Discrete actions (0, 1): log pi = (ln 3/4, ln 1/4); Gaussian actions
    (1, 0) under N(0, 1): log pi = (-1/2 - ln sqrt(2 pi), -ln sqrt(2 pi)).
    Per-step means: policy -(0.5 log pi_0 - log pi_1) / 2, value ((0.5)^2 + 1^2) / 2 = 0.625, entropy H.
    loss = (policy + 0.25 value - 0.1 H) * T / t_max = the sum over the steps over t_max * N.

    One-step rollout (an episode's end after 1 of the t_max 2 steps): s = 2, reward 1, terminated:
    R = 1, V = 2, A = -1, action 1 (discrete) or 0 (Gaussian); per-step means policy log pi_1,
    value 1, entropy H; the loss is half of their combination (T / t_max = 1/2), so its one
    transition weighs what a transition of a full rollout does.

    d loss / d w comes from the value term alone (advantages and targets are constants): with t_max N = 2,
    d/dw 0.25 * sum_t (R_t - w s_t)^2 / 2 = -0.25 * sum_t s_t (R_t - V_t): full -0.25 * (1 * 0.5 + 2 * -1) = 0.375,
    one-step -0.25 * (2 * -1) = 0.5.

    With loss_reduction "sum" (Algorithm S3's accumulated gradients) the loss and d loss / d w are the sums,
    t_max N = 2 times the above: the per-step gradients -A_t grad log pi + 0.25 grad (R_t - V_t)^2 - 0.1 grad H
    added up, not averaged.
    """
    if discrete:
        full_actions, one_action = torch.tensor([0, 1]), torch.tensor([1])
        log_pi, entropy = (LN[0.75], LN[0.25]), CATEGORICAL_ENTROPY
    else:
        full_actions, one_action = torch.tensor([[1.0], [0.0]]), torch.tensor([[0.0]])
        log_pi, entropy = (-0.5 - LOG_SQRT_2PI, -LOG_SQRT_2PI), NORMAL_ENTROPY
    config = A3CConfig(n_steps=2, gamma=0.5, vf_coef=0.25, ent_coef=0.1, loss_reduction=reduction)
    scale = 2.0 if reduction == "sum" else 1.0
    cases = [  # observations, actions, rewards; policy, value, entropy means; loss; d loss / d w
        ([1.0, 2.0], full_actions, [1.0, 1.0], -(0.5 * log_pi[0] - log_pi[1]) / 2, 0.625, entropy, 1.0, 0.375),
        ([2.0], one_action, [1.0], log_pi[1], 1.0, entropy, 0.5, 0.5),
    ]
    for observations, actions, rewards, policy, value, mean_entropy, fraction, grad_w in cases:
        model = HandSetModel(discrete)
        steps = len(observations)
        rollout = Rollout(
            observations=torch.tensor(observations).reshape(steps, 1, 1),
            raw_observations=np.zeros((steps, 1)),
            actions=actions.reshape(steps, 1, *actions.shape[1:]),
            rewards=np.array(rewards, np.float32)[:, None],
            terminated=np.array([True]),
            truncated=np.array([False]),
            last_obs=np.zeros((1, 1), np.float32),
            next_obs=np.zeros((1, 1), np.float32),
            episode_returns=np.zeros(1),
            episode_lengths=np.zeros(1, np.int64),
            initial_state=(),
            episode_starts=torch.zeros(steps, 1, dtype=torch.bool),
            final_state=(),
        )
        loss, stats = a3c_loss(model, rollout, rollout.rewards, np.zeros(1, np.float32), config)
        assert stats == pytest.approx({"policy_loss": policy, "value_loss": value, "entropy": mean_entropy}, rel=1e-5)
        assert loss.item() == pytest.approx(scale * fraction * (policy + 0.25 * value - 0.1 * mean_entropy), rel=1e-5)
        loss.backward()
        assert model.w.grad.item() == pytest.approx(scale * grad_w, rel=1e-5)


# ------------------------------------------------------------------- the parent's report
def test_fps_counts_the_steps_taken_since_the_last_report_evaluations_included(monkeypatch):
    """The parent's clock and the workers' counters set by hand, no worker running (the budget is spent,
    so `training()` starts none and `iteration` does not wait).

    t = 1 s: 100 steps taken since the start (t = 0): 100 steps/s. Then an evaluation lasts until
    t = 3 s while the workers take 300 steps; the next report at t = 3.01 s, 2 steps later, and
    with a rollout of 40 steps claimed but not taken yet: (300 + 2) / 2.01 s = 150.2 steps/s,
    at step 402 (not 442, and not 2 steps / 0.01 s = 200 steps/s)."""
    import acrl.algos.a3c as a3c

    clock = iter([0.0, 1.0, 3.01])
    monkeypatch.setattr(a3c.time, "perf_counter", lambda: next(clock))
    agent = A3C("CartPole-v1", workers=1, seed=0)
    agent.total_steps = 0  # nothing left: no worker starts
    with agent.training():
        budget = agent._budget
        budget.count_taken(0, 100)
        first = agent.iteration(100)
        budget.count_taken(0, 302)
        budget.claimed.value = 442  # 40 of them claimed by a rollout still running
        second = agent.iteration(100)
    assert (first["time/fps"], first["time/elapsed_s"]) == (100.0, 1.0)
    assert second["time/fps"] == pytest.approx(302 / 2.01) and second["time/elapsed_s"] == 3.01
    assert agent.num_steps == 402


def test_the_snapshot_is_a_private_frozen_copy_of_the_global_model():
    """What the loop evaluates, saves and checks for non-finite values while the workers train:
    equal to the global model when taken, in private memory, unchanged by later updates."""
    agent = A3C("CartPole-v1", workers=1, seed=0)
    frozen = agent.snapshot().nets["model"]
    before = [p.clone() for p in agent.model.parameters()]
    with torch.no_grad():
        agent.parameters.add_(1.0)  # a worker's update
    for old, new, copied in zip(before, agent.model.parameters(), frozen.parameters()):
        assert torch.equal(copied, old) and torch.equal(new, old + 1.0)
        assert new.is_shared() and not copied.is_shared()
