"""The one actor-critic (acrl.parts.actor_critic): its parameters and their order, a shared trunk set by hand,
sampling, the Gaussian's floor, and the interface (`initial_state`, `act`, `evaluate`, `value`) for a
feed-forward core (empty state) and an LSTM core, against step-by-step acting and a hand-computed cell."""

import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from acrl.algos.a3c import A3CConfig
from acrl.algos.appo import APPOConfig
from acrl.algos.impala import IMPALAConfig
from acrl.algos.ppo import PPOConfig
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic, FeedForwardCore
from acrl.parts.recurrent import LSTMCore
from tests.conftest import hand_lstm, script_ramp_lstm


def box(n: int) -> gym.spaces.Box:
    return gym.spaces.Box(-np.inf, np.inf, (n,), np.float32)


def actions_of(discrete: bool, n: int) -> gym.Space:
    return gym.spaces.Discrete(n) if discrete else gym.spaces.Box(-1.0, 1.0, (n,), np.float32)


@pytest.mark.parametrize("discrete", [True, False])
def test_parameter_counts_shapes_and_order(discrete):
    """obs 5, 3 actions, hidden (16, 16), critic (32,); weights + biases per layer:
      separate critic: actor 5*16+16 + 16*16+16 + 16*3+3 = 419, critic 5*32+32 + 32+1 = 225: 644
      shared trunk:    trunk 5*16+16 + 16*16+16 = 368, policy layer 16*3+3 = 51, value layer 16+1 = 17: 436
    and a Gaussian policy adds its 3 log-stds. The parameters come as encoder, log-std, policy layer,
    critic (the flat layout of PPO's and A3C's optimizers and checkpoints, `acrl.core.checkpoint`)."""
    gaussian = 0 if discrete else 3
    for shared_trunk, count in ((False, 644 + gaussian), (True, 436 + gaussian)):
        model = ActorCritic(box(5), actions_of(discrete, 3), (16, 16), "relu", shared_trunk=shared_trunk,
                            critic_hidden_sizes=(32,))  # fmt: skip
        assert sum(p.numel() for p in model.parameters()) == count, shared_trunk
        names = [name for name, _ in model.named_parameters()]
        expected = ["actor.encoder.0.weight", "actor.encoder.0.bias", "actor.encoder.2.weight", "actor.encoder.2.bias"]
        expected += [] if discrete else ["actor.head.log_std"]
        expected += ["actor.head.linear.weight", "actor.head.linear.bias"]
        critic = ["critic.weight", "critic.bias"] if shared_trunk else [f"critic.net.{i}.{p}" for i in (0, 2)
                                                                          for p in ("weight", "bias")]  # fmt: skip
        assert names == expected + critic
        assert model.initial_state(7) == () and isinstance(model.actor.core, FeedForwardCore)
        obs = torch.randn(7, 5)
        actions, log_probs, state = model.act(obs, (), torch.zeros(7, dtype=torch.bool))
        assert actions.shape == ((7,) if discrete else (7, 3)) and log_probs.shape == (7,) and state == ()
        outputs = model.evaluate(obs.view(1, 7, 5), actions.view(1, 7, *actions.shape[1:]), (), torch.zeros(1, 7))
        assert [t.shape for t in outputs] == [(1, 7)] * 3
        torch.testing.assert_close(outputs[0][0], log_probs)
        assert model.value(obs, ()).shape == (7,)


@pytest.mark.parametrize("discrete", [True, False])
def test_a_shared_trunk_set_by_hand(discrete):
    """obs 2, 2 actions, one shared hidden layer of 2 ReLUs: 6 + policy layer 6 + value layer 3 (+ 2 log-stds).
    Trunk h = relu(s0, s1 - 1); value V = h0 - 0.5 h1 + 0.25; policy out = (ln3/2 h0, -ln3/2 h0) + (0, ln3).
    s = (2, 3): h = (2, 2), V = 1.25, out = (ln3, 0).   s = (-1, 0.5): h = (0, 0), V = 0.25, out = (0, ln3)."""
    model = ActorCritic(box(2), actions_of(discrete, 2), (2,), "relu", shared_trunk=True)
    assert sum(p.numel() for p in model.parameters()) == (15 if discrete else 17)
    ln2, ln3, ln2pi = math.log(2.0), math.log(3.0), math.log(2 * math.pi)
    with torch.no_grad():
        for layer, weight, bias in (
            (model.actor.encoder[0], [[1.0, 0.0], [0.0, 1.0]], [0.0, -1.0]),
            (model.critic, [[1.0, -0.5]], [0.25]),
            (model.actor.head.linear, [[ln3 / 2, 0.0], [-ln3 / 2, 0.0]], [0.0, ln3]),
        ):
            layer.weight.copy_(torch.tensor(weight))
            layer.bias.copy_(torch.tensor(bias))
        if not discrete:
            model.actor.head.log_std.copy_(torch.tensor([0.0, ln2]))  # std (1, 2)
    obs = torch.tensor([[2.0, 3.0], [-1.0, 0.5]])
    torch.testing.assert_close(model.value(obs, ()), torch.tensor([1.25, 0.25]))
    if discrete:
        # softmax(ln3, 0) = (3/4, 1/4) and softmax(0, ln3) = (1/4, 3/4); actions (0, 0).
        actions = torch.tensor([0, 0])
        expected_log_probs = [math.log(0.75), math.log(0.25)]
        expected_entropy = [-(0.75 * math.log(0.75) + 0.25 * math.log(0.25))] * 2
        expected_mode = torch.tensor([0, 1])
    else:
        # Means (ln3, 0) and (0, ln3), std (1, 2); actions at z = (1, 1) and z = (0, 0) from the mean.
        actions = torch.tensor([[ln3 + 1.0, 2.0], [0.0, ln3]])
        expected_log_probs = [-0.5 * 2 - ln2 - ln2pi, -ln2 - ln2pi]  # -z.z/2 - sum log std - 2 * log sqrt(2 pi)
        expected_entropy = [1.0 + ln2pi + ln2] * 2  # sum over dims of 1/2 + log sqrt(2 pi) + log std
        expected_mode = torch.tensor([[ln3, 0.0], [0.0, ln3]])
    log_probs, entropy, values = model.evaluate(obs[None], actions[None], (), torch.zeros(1, 2, dtype=torch.bool))
    torch.testing.assert_close(log_probs[0], torch.tensor(expected_log_probs, dtype=torch.float32))
    torch.testing.assert_close(entropy[0], torch.tensor(expected_entropy, dtype=torch.float32))
    torch.testing.assert_close(values[0], torch.tensor([1.25, 0.25]))
    mode, log_probs, _ = model.act(obs, (), torch.zeros(2, dtype=torch.bool), deterministic=True)
    torch.testing.assert_close(mode, expected_mode)
    expected_mode_log_probs = [math.log(0.75)] * 2 if discrete else [-ln2 - ln2pi] * 2
    torch.testing.assert_close(log_probs, torch.tensor(expected_mode_log_probs, dtype=torch.float32))
    assert model.act(obs, (), torch.zeros(2, dtype=torch.bool), with_log_prob=False).log_probs is None


def test_gumbel_max_sampling_follows_softmax():
    model = ActorCritic(box(1), gym.spaces.Discrete(2), (4,))
    with torch.no_grad():
        model.actor.head.linear.weight.zero_()
        model.actor.head.linear.bias.copy_(torch.tensor([0.0, math.log(3.0)]))  # P(action 1) = 0.75
    torch.manual_seed(0)
    actions = model.act(torch.zeros(20_000, 1), (), torch.zeros(20_000, dtype=torch.bool)).actions
    assert actions.float().mean().item() == pytest.approx(0.75, abs=0.015)


@pytest.mark.parametrize("shared_trunk", [False, True])
def test_gaussian_std_has_a_floor_and_stays_finite(shared_trunk):
    model = ActorCritic(box(3), actions_of(False, 2), (8,), shared_trunk=shared_trunk, log_std_min=-5.0)
    with torch.no_grad():
        model.actor.head.log_std.fill_(-1e6)
    obs = torch.randn(4, 3)
    torch.testing.assert_close(model.actor.head.distribution(model.actor.encoder(obs)).stddev,
                               torch.full((4, 2), math.exp(-5.0)))  # fmt: skip
    actions = model.act(obs, (), torch.zeros(4, dtype=torch.bool)).actions
    log_probs, entropy, _ = model.evaluate(obs[None], actions[None], (), torch.zeros(1, 4, dtype=torch.bool))
    assert torch.isfinite(log_probs).all() and torch.isfinite(entropy).all()


def test_frames_share_the_trunk_and_vectors_do_not_unless_asked():
    frames = gym.spaces.Box(0, 255, (12, 12, 3), np.uint8)
    assert ActorCritic(frames, gym.spaces.Discrete(2), channels="last").shared_trunk
    assert not ActorCritic(box(3), gym.spaces.Discrete(2)).shared_trunk
    assert ActorCritic(box(3), gym.spaces.Discrete(2), shared_trunk=True).shared_trunk
    lstm = ActorCritic(box(3), gym.spaces.Discrete(2), lstm_hidden_size=4)
    assert lstm.shared_trunk and isinstance(lstm.actor.core, LSTMCore)


@pytest.mark.parametrize("config_class", [PPOConfig, A3CConfig, IMPALAConfig, APPOConfig])
def test_every_actor_critic_config_checks_and_records_the_model_settings(config_class):
    """The settings are declared and checked once (`ActorCriticConfig`), for every on-policy algorithm; the
    config then records what "auto" and frames resolved to: a 12x12 frame takes the MinAtar CNN (under 36x36)
    and shares the trunk, though shared_trunk was asked false."""
    for values, message in (
        ({"activation": "gelu"}, "activation must be one of"),
        ({"critic_hidden_sizes": (64, 0)}, "critic_hidden_sizes must be a non-empty list of positive"),
        ({"lstm_hidden_size": -1}, "lstm_hidden_size must be >= 0"),
    ):
        with pytest.raises(InputError, match=message):
            config_class(**values).validate()
    config = config_class(channels="last")
    ActorCritic.from_config(gym.spaces.Box(0, 255, (12, 12, 3), np.uint8), gym.spaces.Discrete(2), config)
    assert (config.encoder, config.shared_trunk) == ("minatar", True)
    config = config_class(shared_trunk=True, hidden_sizes=(8,))
    model = ActorCritic.from_config(box(3), gym.spaces.Discrete(2), config)
    assert (config.encoder, config.shared_trunk) == ("mlp", True)
    assert sum(p.numel() for p in model.parameters()) == (3 * 8 + 8) + (8 * 2 + 2) + (8 + 1)


# ------------------------------------------------------------------ the interface with an LSTM core
def ramp_model() -> ActorCritic:
    """The scripted one-cell LSTM of `script_ramp_lstm`: V = h, with (h, c) from `hand_lstm` on tanh(obs)."""
    model = ActorCritic(box(1), gym.spaces.Discrete(2), (1,), lstm_hidden_size=1)
    script_ramp_lstm(model.actor, model.critic)
    return model


def test_value_is_one_step_on_without_a_reset_and_act_resets_at_episode_start():
    """From (h, c) after obs 0.1 (by hand), `value` at 0.2 continues the episode: V = h of `hand_lstm`(tanh 0.2,
    h, c); `act` with episode_start True at 0.2 forgets it: its state is `hand_lstm`(tanh 0.2, 0, 0)."""
    model = ramp_model()
    h1, c1 = hand_lstm(math.tanh(0.1), 0.0, 0.0)
    state = (torch.full((1, 1, 1), h1), torch.full((1, 1, 1), c1))
    with torch.no_grad():
        value = model.value(torch.tensor([[0.2]]), state)
        _, _, (h, c) = model.act(torch.tensor([[0.2]]), state, torch.tensor([True]))
    assert value.item() == pytest.approx(hand_lstm(math.tanh(0.2), h1, c1)[0], abs=1e-6)
    assert (h.item(), c.item()) == pytest.approx(hand_lstm(math.tanh(0.2), 0.0, 0.0), abs=1e-6)


def test_evaluate_reruns_what_act_did_step_by_step_with_resets_inside():
    """T = 6 steps of N = 3 environments, episodes starting at random steps (the first step's included),
    from a random state: `evaluate`'s log-probabilities and values (with gradients to the first state's
    parameters, not to the state) equal those of acting step by step, to float32 round-off."""
    torch.manual_seed(0)
    model = ActorCritic(box(4), gym.spaces.Discrete(3), (16,), lstm_hidden_size=8)
    obs, starts = torch.randn(6, 3, 4), torch.rand(6, 3) < 0.3
    starts[0, 1] = True
    first = tuple(torch.randn(1, 3, 8) for _ in range(2))
    state, actions, log_probs, values = first, [], [], []
    with torch.no_grad():
        for t in range(6):
            features, _ = model.actor.core.step(model.actor.encoder(obs[t]), state, starts[t])
            values.append(model.critic(obs[t], features))
            acted, log_prob, state = model.act(obs[t], state, starts[t])
            actions.append(acted)
            log_probs.append(log_prob)
    rerun_log_probs, entropy, rerun_values = model.evaluate(obs, torch.stack(actions), first, starts)
    torch.testing.assert_close(rerun_log_probs, torch.stack(log_probs), atol=1e-6, rtol=0)
    torch.testing.assert_close(rerun_values, torch.stack(values), atol=1e-6, rtol=0)
    with torch.no_grad():  # the values alone, as PPO's rollout takes them
        torch.testing.assert_close(model.sequence_values(obs, first, starts), torch.stack(values), atol=1e-6, rtol=0)
    assert entropy.shape == (6, 3) and (entropy > 0).all()
    (rerun_log_probs.sum() + rerun_values.sum()).backward()
    assert model.actor.core.cell.weight_hh.grad.abs().sum() > 0  # through the recurrence


def test_sequence_values_of_a_separate_critic_read_the_observations_alone():
    """Without a shared trunk V(s) is the critic's MLP on each observation, whatever the (empty) state and the
    episode starts: (T, N) values equal the critic on the flattened observations, and the actor's trunk is not run."""
    torch.manual_seed(0)
    model = ActorCritic(box(4), gym.spaces.Discrete(3), (16,))
    obs = torch.randn(5, 2, 4)
    model.actor.encoder.register_forward_hook(lambda *args: pytest.fail("the actor's trunk ran"))
    with torch.no_grad():
        values = model.sequence_values(obs, (), torch.zeros(5, 2, dtype=torch.bool))
        expected = model.critic.net(obs.flatten(0, 1)).squeeze(-1).reshape(5, 2)
    torch.testing.assert_close(values, expected, atol=0, rtol=0)
