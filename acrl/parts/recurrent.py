"""The recurrent core of a policy: one LSTM layer between the encoder and the heads.

A policy with memory is encoder -> `LSTMCore` -> heads (`acrl.parts.actor_critic.ActorCritic`, whose
feed-forward core has the same interface and an empty state). Its state is a tuple (h, c) of (1, N,
hidden_size) float32 tensors (layers, environments, cells), as `torch.nn.LSTM` and Stable-Baselines3's
RecurrentPPO keep it; `episode_start` (N,) bool marks the environments whose step begins an episode, and the
state of those is reset to zeros before that step (docs/correctness.md item 12), whether the previous episode
terminated or was truncated.

`step` advances one time step of N environments (acting); `sequence` runs T steps of rollout
chunks from given states, resetting at the episode starts inside them (PPO's sequence
minibatches, A3C's rollouts, an IMPALA learner's unrolls). `sequence` runs the same equations as
`step`, so the states a rollout saw are the states its minibatches recompute, to float32 round-off.

Under bfloat16 autocast (`precision="bf16"`, `acrl.core.devices.precision_context`) on the CPU, torch keeps
the cell (`step`: acting) in float32 and runs the fused `torch.lstm` (`sequence`: training) in bfloat16;
on CUDA autocast runs both in bfloat16. Either way the state both return is float32, so what is carried
from step to step and stored in rollouts is; the recomputed states then agree with the rollout's to
bfloat16 round-off.

Actor and critic share the one core (and the encoder), with a policy head and a value head on
its output: as CleanRL's ppo_atari_lstm (Huang et al. 2022) and the A3C paper's LSTM agent
(Mnih et al. 2016, Sec. 8: "a final hidden layer of 256 LSTM cells" before the policy and value
outputs). One state per environment then serves acting and the truncation bootstrap, and the
memory is trained by both losses. (SB3-contrib's RecurrentPPO gives the critic its own LSTM by
default, which doubles the state to carry and the sequence compute.)

The cell is a `torch.nn.LSTMCell`, not a `torch.nn.LSTM`: PPO and A3C make every parameter a view
of one flat tensor (`acrl.parts.optim.flatten_parameters`), and on CUDA `nn.LSTM` re-packs its
weights into a cuDNN buffer of its own at every `.to()`, which would cut them off from that
tensor; the cell keeps plain parameters. `sequence` hands them to `torch.lstm`, the op `nn.LSTM` calls
(`acrl.core.torch_fast.lstm`).
"""

from __future__ import annotations

import torch
from torch import nn

from acrl.core import torch_fast

LSTMState = tuple[torch.Tensor, torch.Tensor]
"""(h, c), each (1, N, hidden_size) float32."""


class LSTMCore(nn.Module):
    """One LSTM layer, a `torch.nn.LSTMCell` (Hochreiter and Schmidhuber 1997, with a forget gate,
    Gers et al. 2000).

    Per step, with x the features and (h, c) the state (zeros where the step starts an episode):
        i = sigmoid(W_ii x + b_ii + W_hi h + b_hi),  f = sigmoid(W_if x + b_if + W_hf h + b_hf),
        g = tanh(W_ig x + b_ig + W_hg h + b_hg),     o = sigmoid(W_io x + b_io + W_ho h + b_ho),
        c' = f * c + i * g,  h' = o * tanh(c'),  output h'.
    Initialised as CleanRL's ppo_atari_lstm (Huang et al. 2022, cleanrl/ppo_atari_lstm.py):
    orthogonal weights of gain 1, zero biases.

    Args:
        input_size: the encoder's features_dim; hidden_size: the LSTM's cells (> 0).
    Attributes:
        output_dim: the width of its outputs, hidden_size (what the heads read).
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden_size)
        for name, param in self.cell.named_parameters():
            if "bias" in name:
                nn.init.zeros_(param)
            else:
                nn.init.orthogonal_(param, 1.0)
        self.hidden_size = self.output_dim = hidden_size

    def initial_state(self, n: int, device: torch.device | str = "cpu") -> LSTMState:
        """The state of N fresh episodes: (h, c) zeros, each (1, n, hidden_size) float32 on `device`."""
        zeros = torch.zeros(1, n, self.hidden_size, device=device)
        return zeros, zeros.clone()

    def step(
        self, features: torch.Tensor, state: LSTMState, episode_start: torch.Tensor
    ) -> tuple[torch.Tensor, LSTMState]:
        """One step of N environments: features (N, input_size) float32, state (h, c) each
        (1, N, hidden_size), episode_start (N,) bool -> (output (N, hidden_size), new state).

        The state is zeroed where episode_start before the step (the first step of an episode
        sees no memory of the previous one)."""
        keep = (~episode_start).to(features.dtype).unsqueeze(-1)
        h, c = self.cell(features, (state[0][0] * keep, state[1][0] * keep))
        return h, (h.unsqueeze(0).float(), c.unsqueeze(0).float())  # a float32 state under bf16 autocast too

    def sequence(
        self, features: torch.Tensor, state: LSTMState, episode_starts: torch.Tensor
    ) -> tuple[torch.Tensor, LSTMState]:
        """T steps of N sequences from `state`: features (T, N, input_size) float32, state (h, c)
        each (1, N, hidden_size) at the sequences' first step, episode_starts (T, N) bool ->
        (outputs (T, N, hidden_size), the state after the last step).

        The sequence is cut before every step where some environment starts an episode; each piece
        runs from the state with those environments' memory zeroed, as `step` does, in one call of
        `acrl.core.torch_fast.lstm` (oneDNN's fused LSTM, or the cell step by step). The outputs
        equal the steps' to float32 round-off (1e-7 here)."""
        cuts = [0, *(torch.nonzero(episode_starts[1:].any(1)).flatten() + 1).tolist(), len(features)]
        outputs = []
        for begin, end in zip(cuts[:-1], cuts[1:]):
            keep = (~episode_starts[begin]).to(features.dtype).view(1, -1, 1)
            out, state = torch_fast.lstm(self.cell, features[begin:end], (state[0] * keep, state[1] * keep))
            outputs.append(out)
        return torch.cat(outputs), (state[0].float(), state[1].float())  # float32 as `step`'s
