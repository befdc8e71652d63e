"""A3C on image observations: the papers' CNNs with one shared trunk, frames uint8/bool in the rollouts, episode
statistics from the vector env's `_episode` mask, checkpoints, the Atari presets and bad input."""

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

import acrl
from acrl import A3C, A3CConfig
from acrl.algos.a3c import collect_rollout
from acrl.core.config import load_presets, preset_values, update_config
from acrl.core.envs import ActionAdapter
from acrl.core.errors import InputError
from acrl.parts.actor_critic import ActorCritic, ObservationCritic, ValueHead
from acrl.parts.normalization import IdentityNormalizer, ObservationNormalizer
from acrl.parts.workers import make_worker_envs
from tests.conftest import Frames

TINY = {"workers": 1, "seed": 0, "eval_freq": 0}


def rollout_of(envs, model, obs, n_steps, normalizer):
    """`collect_rollout` from fresh states (every environment's first step starts an episode)."""
    adapter, starts = ActionAdapter(envs.single_action_space), np.ones(len(obs), bool)
    return collect_rollout(
        envs, model, obs, n_steps, adapter, normalizer, model.initial_state(len(obs)), torch.from_numpy(starts)
    )


def vector_model(obs_dim: int, hidden_sizes: tuple[int, ...]) -> ActorCritic:
    """A3C's model for obs_dim vectors and 2 discrete actions."""
    space = gym.spaces.Box(-np.inf, np.inf, (obs_dim,), np.float32)
    return ActorCritic(space, gym.spaces.Discrete(2), hidden_sizes)


class AtariSizedFrames(Frames):
    """Channels-first (4, 84, 84) uint8 frames as a frame-stacked Atari game gives them, 6 actions."""

    observation_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    action_space = gym.spaces.Discrete(6)


def n_parameters(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize(
    "env, encoder, expected",
    [
        # Mnih et al. 2016 (after 2013): conv 16 8x8 s4 on 4 channels, conv 32 4x4 s2, fc 256 on 32 x 9 x 9;
        # then the policy layer (256 x 6 actions + 6) and the value layer (256 + 1).
        (AtariSizedFrames, "a3c", 4112 + 8224 + 663_808 + 1542 + 257),
        # Mnih et al. 2015: conv 32 8x8 s4 (4 * 32 * 64 + 32), 64 4x4 s2 (32 * 64 * 16 + 64), 64 3x3 s1
        # (64 * 64 * 9 + 64), fc 512 on 64 x 7 x 7 (3136 * 512 + 512); heads 512 * 6 + 6 and 512 + 1.
        (AtariSizedFrames, "nature", 8224 + 32_832 + 36_928 + 1_606_144 + 3078 + 513),
        # Young and Tian 2019: conv 16 3x3 s1 on 4 channels (4 * 16 * 9 + 16), fc 128 on 16 x 8 x 8
        # (1024 * 128 + 128); Breakout's 3 actions (128 * 3 + 3) and the value (128 + 1).
        ("MinAtar/Breakout-v1", "minatar", 592 + 131_200 + 387 + 129),
    ],
)
def test_the_papers_cnns_with_one_trunk_and_two_heads_have_their_parameter_counts(env, encoder, expected):
    agent = A3C(env, encoder=encoder, **TINY)
    assert n_parameters(agent.model) == expected
    assert agent.config.encoder == encoder and agent.model.shared_trunk and isinstance(agent.model.critic, ValueHead)
    head, value = agent.model.actor.head.linear, agent.model.critic
    assert [tuple(p.shape) for p in value.parameters()] == [(1, head.in_features), (1,)]
    # CleanRL's ppo_atari init: orthogonal trunk of gain sqrt(2) (W W^T = 2 I for the first conv's
    # 16 or 32 rows of 4 x k x k), policy rows of norm 0.01, a value row of norm 1.
    conv = agent.model.actor.encoder.net[0].weight.flatten(1)
    torch.testing.assert_close(conv @ conv.T, 2.0 * torch.eye(len(conv)), atol=1e-5, rtol=0)
    torch.testing.assert_close(head.weight.norm(dim=1), torch.full((agent.act_dim,), 0.01))
    assert torch.isclose(value.weight.norm(), torch.tensor(1.0))
    assert head.bias.abs().sum() == 0 and value.bias.abs().sum() == 0


def minatar_frame(seed: int) -> np.ndarray:
    """A random (10, 10, 4) bool frame, as MinAtar's observation space samples them."""
    space = gym.spaces.Box(0, 1, (10, 10, 4), np.bool_)
    space.seed(seed)
    return space.sample()


def test_the_value_is_one_linear_layer_on_the_policy_trunk():
    model = A3C("MinAtar/Breakout-v1", **TINY).model
    obs = torch.from_numpy(np.stack([minatar_frame(i) for i in range(3)]))
    features = model.actor.encoder(obs)
    expected = features @ model.critic.weight[0] + model.critic.bias[0]
    torch.testing.assert_close(model.value(obs, ()), expected)
    _, _, values = model.evaluate(obs[None], torch.tensor([[0, 1, 2]]), (), torch.zeros(1, 3, dtype=torch.bool))
    torch.testing.assert_close(values[0], expected)


@pytest.mark.parametrize("env, dtype", [(Frames, np.uint8), ("MinAtar/Breakout-v1", np.bool_)])
def test_frames_stay_in_their_dtype_in_the_rollout_without_a_float_copy(env, dtype):
    agent = A3C(env, **TINY)
    assert isinstance(agent.obs_normalizer, IdentityNormalizer) and agent.obs_normalizer.dtype is None
    envs, first = make_worker_envs(env, 0, 0, 2)
    rollout = rollout_of(envs, agent.model, first, 5, agent.obs_normalizer)
    shape = agent.observation_space.shape
    steps = len(rollout)
    assert rollout.observations.dtype == torch.from_numpy(np.zeros(1, dtype)).dtype
    assert tuple(rollout.observations.shape) == (steps, 2, *shape)
    pixels = steps * 2 * int(np.prod(shape))
    assert rollout.observations.numel() * rollout.observations.element_size() == pixels  # one byte a pixel
    assert rollout.raw_observations is None  # no float64 copy for the normaliser either
    assert np.array_equal(rollout.observations[0].numpy(), first)  # the frames as the environments gave them
    assert rollout.last_obs.dtype == dtype and rollout.next_obs.dtype == dtype


def test_vectors_keep_the_float64_copy_only_for_the_normaliser():
    envs, first = make_worker_envs("CartPole-v1", 0, 0, 2)
    model = vector_model(4, (8,))
    plain = rollout_of(envs, model, first, 3, IdentityNormalizer())
    assert plain.raw_observations is None and plain.observations.dtype == torch.float32
    normalizer = ObservationNormalizer(4)
    normalized = rollout_of(envs, model, plain.next_obs, 3, normalizer)
    assert normalized.raw_observations.dtype == np.float64
    assert normalized.raw_observations.shape == (len(normalized) * 2, 4)
    np.testing.assert_array_equal(normalized.raw_observations[:2], plain.next_obs)


class LifeLossVectorEnv:
    """A hand-made same-step-autoreset vector env of 2 Atari-like games (obs (2, 2) float32): env 0 loses a life
    at its 2nd step (terminated, `_final_obs` set, but no `episode` entry: the game goes on) and its game ends at
    the 4th (`_episode` set, return 21, length 4); env 1 never ends."""

    single_action_space = gym.spaces.Discrete(2)

    def __init__(self):
        self.t = 0

    def step(self, actions):
        self.t += 1
        obs = np.full((2, 2), float(self.t), np.float32)
        terminated = np.array([self.t in (2, 4), False])
        info = {}
        if terminated[0]:
            final = np.full(2, -float(self.t), np.float32)
            info = {"final_obs": np.array([final, None], dtype=object), "_final_obs": np.array([True, False])}
        if self.t == 4:
            info |= {"episode": {"r": np.array([21.0, 0.0]), "l": np.array([4, 0])}}
            info["_episode"] = np.array([True, False])
        return obs, np.ones(2), terminated, np.zeros(2, bool), info


def test_episode_statistics_come_from_the_episode_mask_and_bootstrapping_from_the_final_obs_mask():
    envs = LifeLossVectorEnv()
    model = vector_model(2, (4,))
    obs = np.zeros((2, 2), np.float32)
    life_lost = rollout_of(envs, model, obs, 5, IdentityNormalizer())
    assert len(life_lost) == 2 and life_lost.terminated.tolist() == [True, False]
    assert life_lost.last_obs.tolist() == [[-2.0, -2.0], [2.0, 2.0]]  # env 0's final observation, env 1's current
    assert life_lost.next_obs.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    assert life_lost.episode_returns.size == 0 and life_lost.episode_lengths.size == 0  # no game ended
    game_over = rollout_of(envs, model, life_lost.next_obs, 5, IdentityNormalizer())
    assert len(game_over) == 2 and game_over.last_obs[0].tolist() == [-4.0, -4.0]
    assert game_over.episode_returns.tolist() == [21.0] and game_over.episode_lengths.tolist() == [4]


def test_a_cnn_run_records_its_encoder_and_its_checkpoint_round_trips(tmp_path):
    agent = A3C("MinAtar/Breakout-v1", workers=2, seed=3, eval_freq=0, log_freq=500, checkpoint_freq=1000)
    agent.learn(2000, run_dir=tmp_path / "run", progress=False)
    config = yaml.safe_load((tmp_path / "run/config.yaml").read_text())["config"]
    assert (config["encoder"], config["shared_trunk"], config["normalize_obs"]) == ("minatar", True, False)
    loaded = acrl.load(tmp_path / "run/checkpoints/latest.pt")
    assert isinstance(loaded, A3C) and loaded.num_steps == agent.num_steps >= 2000
    assert loaded.config.encoder == "minatar" and loaded.model.shared_trunk
    for a, b in zip(agent.model.state_dict().values(), loaded.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    state_a, state_b = agent.optimizer.state_dict()["state"], loaded.optimizer.state_dict()["state"]
    assert all(torch.equal(state_a[k]["square_avg"], state_b[k]["square_avg"]) for k in state_a)
    assert int(state_a[0]["step"]) > 0  # the workers' updates stepped the shared optimizer
    obs = np.stack([minatar_frame(i) for i in range(8)])
    actions = agent.predict(obs)
    assert actions.shape == (8,) and np.array_equal(actions, loaded.predict(obs))
    assert agent.predict(obs[0], deterministic=False) in (0, 1, 2)
    assert len(loaded.evaluate(2)["returns"]) == 2


def test_a_vector_run_records_the_mlp_encoder_and_keeps_its_separate_critic():
    agent = A3C("CartPole-v1", **TINY)
    assert (agent.config.encoder, agent.config.shared_trunk) == ("mlp", False)
    assert isinstance(agent.model.critic, ObservationCritic)


def test_shared_trunk_false_with_frames_is_recorded_as_the_shared_trunk_it_gets():
    agent = A3C(Frames, shared_trunk=False, **TINY)
    assert agent.config.shared_trunk is True and agent.model.shared_trunk


def test_bad_inputs_on_frames_are_input_errors_before_any_work():
    with pytest.raises(InputError, match="normalize_obs does not apply to image observations"):
        A3C("MinAtar/Breakout-v1", normalize_obs=True, **TINY)
    with pytest.raises(InputError, match="encoder must be one of auto, mlp, nature, a3c, minatar, got 'resnet'"):
        A3C("MinAtar/Breakout-v1", encoder="resnet", **TINY)
    with pytest.raises(InputError, match="encoder 'a3c' needs frames of at least 20x20 pixels; this environment's"):
        A3C("MinAtar/Breakout-v1", encoder="a3c", **TINY)
    with pytest.raises(InputError, match="encoder 'nature' takes image frames; this environment's observations are"):
        A3C("CartPole-v1", encoder="nature", **TINY)

    class FloatFrames(Frames):
        observation_space = gym.spaces.Box(0.0, 1.0, (84, 84, 3), np.float32)

    with pytest.raises(InputError, match="no encoder takes .* dtype float32.*uint8 or bool"):
        A3C(FloatFrames, **TINY)


def test_the_minatar_presets_cover_the_five_games_and_the_atari_presets_validate():
    presets = load_presets("a3c")
    games = ("Breakout", "Asterix", "Freeway", "Seaquest", "SpaceInvaders")
    minatar = [presets[f"MinAtar/{game}-v1"]["default"] for game in games]
    assert all(values == minatar[0] for values in minatar)  # one entry (a YAML anchor)
    assert A3C.from_preset("MinAtar/Breakout-v1", workers=1).config.encoder == "minatar"
    configs = {}
    for name in ("default", "original", "reference"):
        values, _ = preset_values("a3c", "ALE/*-v5", name)
        configs[name] = update_config(A3CConfig(), values, f"ALE/*-v5:{name}")
        configs[name].validate()
    original, default = configs["original"], configs["default"]
    # Mnih et al. 2016, Sec. 8: the 2013 net, t_max 5, shared RMSProp decay 0.99, lr annealed, entropy 0.01.
    assert (original.encoder, original.n_steps, original.optimizer, original.rmsprop_alpha) == (
        "a3c",
        5,
        "rmsprop",
        0.99,
    )
    assert (original.anneal_lr, original.ent_coef, original.gamma, original.n_envs) == (True, 0.01, 0.99, 1)
    assert 1e-4 <= original.learning_rate <= 1e-2  # inside the paper's log-uniform range
    # Algorithm S3's summed gradients, Eq. S3's RMSProp with eps 0.1, annealed over the authors' 320M frames,
    # the halved value gradient and the clip at 40 (the authors' replies: docs/a3c-pong.md, section 5).
    assert (original.loss_reduction, original.rmsprop_eps_inside, original.optimizer_eps) == ("sum", True, 0.1)
    assert (original.anneal_steps, original.vf_coef, original.max_grad_norm) == (80_000_000, 0.5, 40.0)
    # universe-starter-agent's learning settings: LSTM 256, t_max 20, Adam 1e-4 constant, vf 0.25, clip 40 / t_max.
    reference = configs["reference"]
    assert (reference.encoder, reference.lstm_hidden_size, reference.n_steps) == ("a3c", 256, 20)
    assert (reference.optimizer, reference.learning_rate, reference.optimizer_eps, reference.anneal_lr) == (
        "adam",
        1e-4,
        1e-8,
        False,
    )
    assert (reference.vf_coef, reference.ent_coef, reference.loss_reduction) == (0.25, 0.01, "mean")
    assert reference.max_grad_norm * reference.n_steps == 40.0
    assert default.encoder == "nature" and not default.normalize_obs
