"""docs/benchmarks.md, the BCQ paper's experiments (Fujimoto et al. 2019, Figure 2) on Pendulum-v1, Hopper-v5,
HalfCheetah-v5 and Walker2d-v5 (bcq_*_extrapolation.json), and discrete BCQ on a behavioral DQN's buffers
(discrete_bcq_breakout.json): `Extrapolation` reads either experiment's table."""

from __future__ import annotations

import statistics

from sections.formats import conditions, kilo, n, pm, signed, table

AGENTS = {
    "behavioral": "behavioral policy",
    "bcq": "BCQ",
    "ddpg": "DDPG (off-policy, same data)",
    "bc": "BC",
    "vae_bc": "VAE-BC",
    "dqn": "DQN (discretised)",
}
"""The experiment's agents; a result from before VAE-BC and DQN joined it has the first four."""
DISCRETE_AGENTS = {
    "behavioral": "behavioral policy",
    "discrete_bcq": "discrete BCQ",
    "dqn": "DQN (offline)",
    "bc": "BC",
    "discrete_cql": "discrete CQL",
}
"""The discrete experiment's agents (acrl.offline.spec.DISCRETE); a result from before discrete CQL joined it has the
first four."""


class Extrapolation:
    """Accessors over one `acrl experiment extrapolation` or `discrete` result (`table` of
    acrl/offline/experiments.py): its buffers are the table's, its agents those of `labels` it holds."""

    def __init__(self, d: dict, labels: dict[str, str] = AGENTS, digits: int = 0):
        self.d, self.t, self.labels, self.digits = d, d["table"], labels, digits
        self.kinds = tuple(self.t["behavioral"])

    def mean(self, agent: str, kind: str) -> float:
        cell = self.t[agent][kind]
        return (cell["return"] if agent == "behavioral" else cell["final"])[0]

    def m(self, agent: str, kind: str) -> str:
        return n(self.mean(agent, kind), self.digits)

    def q(self, agent: str, kind: str) -> str:
        """'estimate against true' of the critic at the first state: '+742 against −686'."""
        cell = self.t[agent][kind]
        return f"{signed(cell['q_initial'][0], self.digits)} against {signed(cell['true_value'][0], self.digits)}"

    def first(self, agent: str, kind: str) -> tuple[int, str]:
        """(the first evaluation's update count, the mean over seeds of its return) of an offline agent's curves."""
        curves = [run["curve"] for run in self.d["results"][kind][agent]]
        return curves[0][0][0], n(statistics.fmean(curve[0][1] for curve in curves), self.digits)

    def agents(self) -> list[str]:
        """The agents this result holds, in `labels` order."""
        return [agent for agent in self.labels if agent in self.t]

    def iqm(self, agent: str, kind: str) -> str:
        """The cell's IQM and 95% CI, 'IQM [low, high]', or '-' for a cell without runs."""
        cell, d = self.t[agent][kind], self.digits
        return (
            "-"
            if cell["iqm"] is None
            else f"{n(cell['iqm'], d)} [{n(cell['iqm_ci'][0], d)}, {n(cell['iqm_ci'][1], d)}]"
        )

    def returns(self, bold: set[tuple[str, str]]) -> str:
        rows = []
        for agent in self.agents():
            cells = []
            for kind in self.kinds:
                cell = self.t[agent][kind]
                value = cell["return"] if agent == "behavioral" else cell["final"]
                text = "-" if value is None else pm(value, self.digits)  # "-": a concurrent run from before it
                cells.append(f"**{text}**" if (agent, kind) in bold else text)
            rows.append([self.labels[agent], *cells])
        for agent in self.agents()[1:]:
            rows.append(
                [f"{self.labels[agent].split(' (')[0]}: IQM [95% CI]", *(self.iqm(agent, k) for k in self.kinds)]
            )
        if "data_episodes" in self.t["behavioral"]["final"] and self.d["env_id"] != "Pendulum-v1":
            episodes = (pm(self.t["behavioral"][k]["data_episodes"], self.digits) for k in self.kinds)
            rows.append(["dataset episodes", *episodes])
        return table(["", *self.kinds], "l" + "r" * len(self.kinds), rows)

    def values(self, bold: set[tuple[str, str]], first_header: str) -> str:
        """The value-estimate table: a row for each agent with a critic (a value in some buffer's cell)."""
        rows = []
        critics = (a for a in self.agents() if any(self.t[a][k].get("q_initial") is not None for k in self.kinds))
        for agent in critics:
            cells = []
            for kind in self.kinds:
                cell = self.t[agent][kind]
                if cell["q_initial"] is None or cell["true_value"] is None:
                    cells.append("-")
                    continue
                text = f"{signed(cell['q_initial'][0], self.digits)} / {signed(cell['true_value'][0], self.digits)}"
                cells.append(f"**{text}**" if (agent, kind) in bold else text)
            rows.append([f"{self.labels[agent].split(' (')[0]}: estimate / true", *cells])
        return table([first_header, *self.kinds], "l" + "r" * len(self.kinds), rows)

    def scale(self) -> str:
        d = self.d
        return (
            f"{len(d['seeds'])} seeds, {n(d['steps_behavioral'])} behavioral steps, "
            f"{n(d['dataset_size'])}-transition buffers, {n(d['updates'])} updates per offline agent, "
            f"{d['eval_episodes']} evaluation episodes every {n(d['eval_freq'])}, "
            f"{d['wall_clock_s'] / 60:.0f} minutes of wall clock"
        )


def bcq_pendulum(results: dict[str, dict]) -> str:
    e = Extrapolation(results["bcq_pendulum_extrapolation"])
    return f"""## The BCQ paper's experiments (Fujimoto et al. 2019, Figure 2)

Each experiment's `.md` next to its JSON holds the table the experiment wrote; the tables here are
rebuilt from the JSON's `table`. Final evaluation (10 episodes), mean ± std over seeds, and the IQM
with its 95% bootstrap CI (rliable, as `acrl sweep`; with 3 seeds the IQM is the mean).

### Pendulum-v1

{e.scale()} on the 2 cores (`benchmarks/results/bcq_pendulum_extrapolation.{{json,md,png}}`; the slow
test `tests/learning/test_bcq_learning.py` runs exactly this and asserts the imitation column).
{conditions(e.d)}

Pendulum is not in the paper. Behavioral DDPG: the preset's 20k steps (400-300); the final buffer
has its own DDPG with N(0, {e.d["final_noise"]}) exploration; learners with smaller networks than the paper's;
{kilo(e.d["updates"])} updates (a tenth of the paper's).

{e.returns({("bcq", "imitation"), ("bcq", "imperfect"), ("ddpg", "imitation")})}

The critic's value estimate at the evaluation episodes' first state against their true discounted
return (the extrapolation error the paper's Sec. 3 describes), at the last evaluation:

{e.values({("ddpg", "imitation")}, "")}

![Pendulum-v1: returns and value estimates per buffer](../benchmarks/results/bcq_pendulum_extrapolation.png)

What reproduces the paper: on imitation data (a noiseless policy, one action per state) off-policy
DDPG fails completely ({e.m("ddpg", "imitation")}) and its critic believes in returns the policy never gets
({e.q("ddpg", "imitation")}); BCQ matches the behavioral policy there and on imperfect data
({e.m("bcq", "imitation")} and {e.m("bcq", "imperfect")} against {e.m("behavioral", "imitation")}), with value
estimates within 3% of the truth there and within 25% on the other two buffers. What does not: on the final buffer
(N(0, {e.d["final_noise"]}) exploration over a 1-D action covers the action space) off-policy DDPG does as well as
the behavioral policy ({e.m("ddpg", "final")} against {e.m("behavioral", "final")}) and BCQ is below it
({e.m("bcq", "final")}); in the concurrent setting both learners are below the behavioral agent, which only
starts to work after 12.5k of its 20k steps. BC matches the behavioral policy on imitation
({e.m("bc", "imitation")}) and falls below it on imperfect data ({e.m("bc", "imperfect")}), as the paper expects.

The paper's two other agents. VAE-BC (BCQ's VAE alone: one decoded action, no critic, no perturbation)
matches the behavioral policy on imitation data ({e.m("vae_bc", "imitation")}) and ends between BC and BCQ on
imperfect data ({e.m("vae_bc", "imperfect")}); on the final and concurrent buffers it copies the exploring
actions as BC does ({e.m("vae_bc", "final")} and {e.m("vae_bc", "concurrent")}). What BCQ adds to its VAE, the
critic's choice among 10 perturbed samples, is worth {n(e.mean("bcq", "imperfect") - e.mean("vae_bc", "imperfect"))}
on imperfect data and {n(e.mean("bcq", "final") - e.mean("vae_bc", "final"))} on the final buffer. DQN with the
torque discretised into 10 sub-actions (as many per dimension as the paper's Supp. D; here −2, −1.56, …, 2 N·m,
none of them 0) is the weakest
learner on the final, concurrent and imitation buffers ({e.m("dqn", "final")}, {e.m("dqn", "concurrent")},
{e.m("dqn", "imitation")}: of its 9 runs there, one or two per buffer reach about −600 and the rest about
−1,600, the pendulum left hanging). On imperfect
data two of its three seeds balance, near the behavioral policy, and one fails, hence
{e.m("dqn", "imperfect")} ± {n(e.t["dqn"]["imperfect"]["final"][1])}. Its critic overestimates on every buffer
({e.q("dqn", "imitation")} on imitation data, {e.q("dqn", "imperfect")} on imperfect data): Q-learning over a
discretised action space extrapolates as DDPG's does.
The former Pendulum claim (one seed, imperfect data, BCQ −98 against DDPG −1,156; no result file) did
not reproduce on another machine and is withdrawn: on imperfect data DDPG is sometimes fine (one
seed of three here)."""


def bcq_hopper(results: dict[str, dict]) -> str:
    e = Extrapolation(results["bcq_hopper_extrapolation"])
    v = results["bcq_vs_d3rlpy_hopper"]
    per: dict[str, dict[str, list[float]]] = {
        k: {"acrl": [], "d3rlpy": []} for k in ("final", "imitation", "imperfect")
    }
    for r in sorted(v["returns"], key=lambda r: r["seed"]):
        per[r["kind"]]["acrl"].append(r["acrl"]["return_mean"])
        per[r["kind"]]["d3rlpy"].append(r["d3rlpy"]["return_mean"])

    def mean_std(values: list[float]) -> str:
        return f"{n(statistics.mean(values))} ± {n(statistics.pstdev(values))}"

    def welch(kind: str) -> float:
        a, b = per[kind]["acrl"], per[kind]["d3rlpy"]
        se = (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5
        return abs(statistics.mean(a) - statistics.mean(b)) / se

    seed_rows = [
        [
            k,
            " / ".join(n(a) for a in per[k]["acrl"]),
            " / ".join(n(b) for b in per[k]["d3rlpy"]),
            mean_std(per[k]["acrl"]),
            mean_std(per[k]["d3rlpy"]),
        ]
        for k in ("final", "imitation", "imperfect")
    ]
    d3 = {k: statistics.mean(per[k]["d3rlpy"]) for k in per}
    ac = {k: statistics.mean(per[k]["acrl"]) for k in per}
    return f"""### Hopper-v5

The paper's network sizes and settings for every agent; {e.scale()} on the 2 cores
(`benchmarks/results/bcq_hopper_extrapolation.{{json,md,png}}`).
{conditions(e.d)}

Scale: **4% of the paper's** on every axis: behavioral DDPGs of {kilo(e.d["steps_behavioral"])} steps (paper: 1M;
10k random start steps instead of 25k), imitation and imperfect buffers of {kilo(e.d["dataset_size"])}
transitions (paper: 1M), {kilo(e.d["updates"])} updates per offline agent (paper: 300k). The behavioral DDPGs end
at {", ".join(n(r["return"]) for r in e.d["results"]["final"]["behavioral"])} (seeds 0, 1, 2); the best
checkpoints that wrote the imitation and imperfect data at
{", ".join(n(r["return"]) for r in e.d["results"]["imitation"]["behavioral"])}, where the paper's reach
~1,000-3,000: a first, small reproduction, not the paper's numbers.

{e.returns({(agent, kind) for agent in ("bcq", "ddpg", "dqn") for kind in ("imitation", "imperfect")})}

{
        e.values(
            {(agent, kind) for agent in ("ddpg", "dqn") for kind in ("concurrent", "imitation")},
            "value at the first state",
        )
    }

![Hopper-v5: returns and value estimates per buffer](../benchmarks/results/bcq_hopper_extrapolation.png)

What reproduces the paper:
- Both off-policy learners collapse on the data of one policy. Offline DDPG ends at {e.m("ddpg", "imitation")} on
  imitation data and {e.m("ddpg", "imperfect")} on imperfect data, DQN over the discretised torques at
  {e.m("dqn", "imitation")} and {e.m("dqn", "imperfect")}, against the behavioral {e.m("behavioral", "imitation")}.
  Their critics believe in returns the policy does not get: DDPG {e.q("ddpg", "imitation")} on imitation data,
  DQN {e.q("dqn", "imitation")}; in the concurrent setting DDPG {e.q("ddpg", "concurrent")} and DQN
  {e.q("dqn", "concurrent")}, the extrapolation error of the paper's Sec. 3.
- BCQ on the same data stays near the behavioral policy ({e.m("bcq", "imitation")} on imitation data,
  {e.m("bcq", "imperfect")} on imperfect data) and keeps its estimates below the true value on every fixed
  buffer ({e.q("bcq", "imitation")} on imitation data).
- BC and VAE-BC match the behavioral policy on imitation data ({e.m("bc", "imitation")} and
  {e.m("vae_bc", "imitation")}) and fall below it on imperfect data ({e.m("bc", "imperfect")} and
  {e.m("vae_bc", "imperfect")}), where BCQ is ahead of both ({e.m("bcq", "imperfect")}), as in the paper, though
  within their spread over 3 seeds (seed 0's imperfect data is reproduced by all three at 983).

What does not, at this scale:
- BCQ is not above the behavioral policy on any buffer (the paper has it at or above on imperfect and final
  data). On the final buffer all three BCQ runs end at {e.m("bcq", "final")}, above the behavioral DDPG of seeds 0
  and 2 and far below seed 1's {n(e.d["results"]["final"]["behavioral"][1]["return"])}; offline DDPG does about
  as well there ({e.m("ddpg", "final")}: N(0, {e.d["final_noise"]}) exploration gives it wide action coverage).
- In the concurrent setting BCQ is below the behavioral agent ({e.m("bcq", "concurrent")} against
  {e.m("behavioral", "concurrent")}), and its critic overestimates too ({e.q("bcq", "concurrent")}), if less than
  DDPG's and DQN's: with one update per behavioral step it trains on a buffer that changes under it.
- BCQ's value estimates on the fixed buffers still rise about linearly at {kilo(e.d["updates"])} updates (a critic
  that starts at 0 needs on the order of 1/(1 − γ) = 100 rounds of bootstrapping to reach the returns' scale):
  it has not converged, at 4% of the paper's 300k updates.

VAE-BC on the final buffer ({e.m("vae_bc", "final")}) is far below BC ({e.m("bc", "final")}), as on Pendulum:
it samples the decoder (BCQ's z, clipped to [−0.5, 0.5]), so it copies the exploring actions, whose episodes
in the buffer return {n(e.t["behavioral"]["final"]["data_episodes"][0])} on average, while BC's regression to the
mean action averages the N(0, {e.d["final_noise"]}) noise out. What BCQ adds to its VAE (the critic's choice
among 10 perturbed samples) is worth {n(e.mean("bcq", "final") - e.mean("vae_bc", "final"))} there and
{n(e.mean("bcq", "imperfect") - e.mean("vae_bc", "imperfect"))} on imperfect data.

**d3rlpy's BCQ on the same Hopper-v5 arrays**, those of this experiment as it ran on {v["date"][:10]}, each
library's BCQ trained on them here, so its table holds its own acrl numbers (d3rlpy {v["d3rlpy_version"]} in its
own venv, the paper's settings for both, the same {kilo(e.d["updates"])} updates and the same evaluation seeds;
`benchmarks/results/bcq_vs_d3rlpy_hopper.{{json,md}}`; it needs the experiment's run directory, as
the datasets are not committed).
{conditions(v)}

{
        table(
            ["dataset (seed 0 / 1 / 2)", "acrl BCQ", "d3rlpy BCQ", "acrl mean ± std", "d3rlpy mean ± std"],
            "lrrrr",
            seed_rows,
        )
    }

The two are level on imperfect data ({n(ac["imperfect"])} against {n(d3["imperfect"])}); acrl is ahead on the
final buffer ({n(ac["final"])} against {n(d3["final"])}) and d3rlpy on imitation data ({n(d3["imitation"])}
against {n(ac["imitation"])}), neither significant over {len(per["final"]["acrl"])} seeds (Welch's t
{welch("final"):.1f} and {welch("imitation"):.1f}), at 4% of the paper's updates, where neither has
converged. A line-by-line reading of both (2026-12-01) found the target (λ-weighted clipped double Q
over 10 sampled actions, max per state), the losses, the VAE's latent clipping, KL weight and
log-std bounds, φ = 0.05, τ, batch size, learning rates, network shapes and the update order the
same. It found three differences:

- **d3rlpy 2.8.1's VAE decoder has no tanh.** Its `VAEDecoder.forward` returns the linear output
  when `with_squash=True`, and that is the default, so BCQ's decoded actions are unbounded until
  the perturbation's clamp to [−1, 1] (`d3rlpy/models/torch/imitators.py`, lines 86–100). The
  authors' code, and acrl, decode max_action · tanh(·).
- **Initialisation.** acrl's networks are initialised orthogonally (gain √2 hidden, 1 output);
  d3rlpy and the authors' code use torch's default.
- **The target actor.** d3rlpy does not start its target actor as a copy of the actor.

The first is the one that could matter on imitation data. That policy's actions sit on the bounds:
12–31% of the components have |a| ≥ 0.9999, depending on the seed (counted by hand). A linear
decoder plus the clamp reproduces such actions exactly, while a tanh decoder's reconstruction
gradient vanishes as it nears them. acrl keeps the authors' tanh. The concurrent setting has no
fixed dataset, so d3rlpy has no entry there. The updates/s in that file are not a speed
comparison: the runs shared the cores with the HalfCheetah experiment and were paused while it
used both (`benchmarks/update_roofline.py` measures speed)."""


def bcq_halfcheetah(results: dict[str, dict]) -> str:
    e = Extrapolation(results["bcq_halfcheetah_extrapolation"])
    final_bcq = e.d["results"]["final"]["bcq"]
    return f"""### HalfCheetah-v5

The same settings and scale as Hopper (4% of the paper's on every axis): {e.scale()}, summed over the three
parts that make it, which shared the cores with other runs
(`benchmarks/results/bcq_halfcheetah_extrapolation.{{json,md,png}}`, merged from
`benchmarks/results/parts/bcq_halfcheetah_extrapolation_*.json`: VAE-BC and DQN on seeds 0-2, BCQ, DDPG and BC on
seeds 0 and 1 and on seed 2, every seed's behavioral and data returns equal in every part to the last digit).
It replaces the table of 2026-12-01 (0.1.0), whose behavioral DDPGs this code no longer reproduces on this CPU: they
part at the first update since e3ccc3c chose oneDNN's linear kernel per CPU generation.
{conditions(e.d)}

{e.returns({("bcq", "imitation"), ("bcq", "imperfect"), ("ddpg", "imitation"), ("dqn", "imitation"), ("bcq", "final")})}

{
        e.values(
            {(agent, kind) for agent in ("ddpg", "dqn") for kind in ("concurrent", "imitation")},
            "value at the first state",
        )
    }

![HalfCheetah-v5: returns and value estimates per buffer](../benchmarks/results/bcq_halfcheetah_extrapolation.png)

What reproduces the paper:
- Both off-policy learners fail on the data of one policy: offline DDPG ends at {e.m("ddpg", "imitation")} and
  DQN over the discretised torques at {e.m("dqn", "imitation")} on imitation data, against the behavioral
  {e.m("behavioral", "imitation")}, while their critics believe in positive returns ({e.q("ddpg", "imitation")} and
  {e.q("dqn", "imitation")}). In the concurrent setting both critics overestimate too (DDPG
  {e.q("ddpg", "concurrent")}, DQN {e.q("dqn", "concurrent")}): the extrapolation error of the paper's Sec. 3.
- BCQ is near the behavioral policy on imitation data ({e.m("bcq", "imitation")}), as are BC and VAE-BC
  ({e.m("bc", "imitation")} and {e.m("vae_bc", "imitation")}), and level with it on imperfect data
  ({e.m("bcq", "imperfect")} against {e.m("behavioral", "imperfect")}), where it is ahead of every other learner:
  BC {e.m("bc", "imperfect")}, VAE-BC {e.m("vae_bc", "imperfect")}, DQN {e.m("dqn", "imperfect")} (one seed of three
  near the behavioral policy), offline DDPG {e.m("ddpg", "imperfect")}.
- BC and VAE-BC fail on the final buffer ({e.m("bc", "final")} and {e.m("vae_bc", "final")}): they copy its
  N(0, {e.d["final_noise"]}) exploration, whose episodes in the buffer return
  {n(e.t["behavioral"]["final"]["data_episodes"][0])} on average.

What does not, at this scale:
- On the final buffer BCQ is below the behavioral policy ({e.m("bcq", "final")} against
  {e.m("behavioral", "final")}; the paper has it above). Seeds 0 and 2 end at {n(final_bcq[0]["final"])} and
  {n(final_bcq[2]["final"])}; seed 1 falls from {n(final_bcq[1]["best"])}, its best, to {n(final_bcq[1]["final"])}
  at its last evaluation. Offline DDPG is lower still ({e.m("ddpg", "final")}). The replaced table had BCQ above the
  behavioral policy there (2,831 against 2,654), which this rerun does not reproduce.
- In the concurrent setting BCQ is below the behavioral agent ({e.m("bcq", "concurrent")} against
  {e.m("behavioral", "concurrent")}; the paper has it level), as is every learner; VAE-BC comes closest after it
  ({e.m("vae_bc", "concurrent")}).
- BCQ's estimates stay well below the true values on every buffer ({e.q("bcq", "imitation")} on imitation
  data): its critic has not converged in {kilo(e.d["updates"])} updates, as on Hopper."""


def bcq_walker2d(results: dict[str, dict]) -> str:
    e = Extrapolation(results["bcq_walker2d_extrapolation"])
    return f"""### Walker2d-v5

The same settings and scale as Hopper (4% of the paper's on every axis): {e.scale()}, summed over the two parts
that make it, which shared the cores with each other and with other runs
(`benchmarks/results/bcq_walker2d_extrapolation.{{json,md,png}}`, merged from
`benchmarks/results/parts/bcq_walker2d_extrapolation_*.json`: BCQ, DDPG and BC, and VAE-BC and DQN, each on seeds 0-2
in one go, every seed's behavioral and data returns equal in both parts to the last digit). It replaces the table of
2026-12-02 (0.1.0), whose behavioral DDPGs this code no longer reproduces on this CPU (see HalfCheetah).
{conditions(e.d)}

{e.returns({("bcq", "final"), ("bcq", "imitation"), ("ddpg", "imitation"), ("dqn", "imitation")})}

{
        e.values(
            {(agent, kind) for agent in ("ddpg", "dqn") for kind in ("concurrent", "imitation")},
            "value at the first state",
        )
    }

![Walker2d-v5: returns and value estimates per buffer](../benchmarks/results/bcq_walker2d_extrapolation.png)

At this scale Walker2d's behavioral DDPG hardly walks: the noise-free policy at the end of its 40k steps returns
{e.m("behavioral", "final")} (final buffer) and {e.m("behavioral", "concurrent")} (concurrent), the best checkpoints
that wrote the imitation and imperfect data {e.m("behavioral", "imitation")}, where the paper's reach 1,000-3,000.
Every return here is small and noisy.

What reproduces the paper:
- Offline DDPG fails on imitation and imperfect data ({e.m("ddpg", "imitation")} and {e.m("ddpg", "imperfect")})
  and in the concurrent setting ({e.m("ddpg", "concurrent")}), with critics far above the truth:
  {e.q("ddpg", "imitation")} on imitation data, {e.q("ddpg", "concurrent")} in the concurrent setting. DQN over
  the discretised torques fails on imitation and imperfect data too ({e.m("dqn", "imitation")} and
  {e.m("dqn", "imperfect")}), its critic at {e.q("dqn", "imitation")} on imitation data and
  {e.q("dqn", "concurrent")} in the concurrent setting: the extrapolation error of the paper's Sec. 3.
- BCQ is above the behavioral policy on the final buffer ({e.m("bcq", "final")} against
  {e.m("behavioral", "final")}) and on imitation data ({e.m("bcq", "imitation")} against
  {e.m("behavioral", "imitation")}), level with it in the concurrent setting ({e.m("bcq", "concurrent")} against
  {e.m("behavioral", "concurrent")}), and ahead of every other learner on the final buffer and on imitation and
  imperfect data. BC and VAE-BC are near the behavioral policy on imitation data ({e.m("bc", "imitation")} and
  {e.m("vae_bc", "imitation")}) and below it on imperfect data ({e.m("bc", "imperfect")} and
  {e.m("vae_bc", "imperfect")}).
- BCQ's estimates stay at or below the true values: {e.q("bcq", "final")} on the final buffer,
  {e.q("bcq", "imitation")} on imitation data (not converged in {kilo(e.d["updates"])} updates, as on Hopper).

What does not, at this scale:
- On imperfect data BCQ is below the behavioral policy ({e.m("bcq", "imperfect")} against
  {e.m("behavioral", "imperfect")}; the paper has it above).
- In the concurrent setting BCQ does not stand out: BC ends at {e.m("bc", "concurrent")}, level with BCQ and the
  behavioral agent within their spread (the paper has BCQ ahead of BC there).

The next steps for these tables are a larger scale and the paper's on a GPU. 100k behavioral steps
and 30k updates (10% of the paper's) would take about 2.8 hours per environment here, since the time
scales with both."""


def discrete_bcq_breakout(results: dict[str, dict]) -> str:
    """`acrl experiment discrete` on MinAtar Breakout (discrete_bcq_breakout.json, .md and .png); empty until it
    exists."""
    if "discrete_bcq_breakout" not in results:
        return ""
    e = Extrapolation(results["discrete_bcq_breakout"], DISCRETE_AGENTS, digits=1)
    return f"""## Discrete BCQ on a behavioral DQN's buffers: MinAtar Breakout-v1 (Fujimoto et al. 2019b)

`acrl experiment discrete` (the paper's Sec. 5 on MinAtar instead of Atari): {e.scale()} on the 2 cores
(`benchmarks/results/discrete_bcq_breakout.{{json,md,png}}`). The final buffer is the behavioral DQN's whole
replay (the MinAtar paper's DQN, epsilon 1 → 0.1), the imperfect one its best checkpoint at epsilon
{e.d["imperfect_epsilon"]}; every learner has the MinAtar DQN's settings and network. Final evaluation
({e.d["eval_episodes"]} episodes), mean ± std over seeds and the IQM with its 95% bootstrap CI.
{conditions(e.d)}

{e.returns(set())}

{e.values(set(), "value at the first state")}

![MinAtar Breakout-v1: returns and value estimates per buffer](../benchmarks/results/discrete_bcq_breakout.png)

What reproduces the paper: offline DQN fails on the imperfect buffer ({e.m("dqn", "imperfect")} against the
behavioral {e.m("behavioral", "imperfect")}; IQM {e.iqm("dqn", "imperfect")} against discrete BCQ's
{e.iqm("discrete_bcq", "imperfect")}) while its value estimate runs far above the truth
({e.q("dqn", "imperfect")}): the extrapolation error, on the data of one near-greedy policy. Discrete BCQ,
on the same data, keeps its estimate below the truth ({e.q("discrete_bcq", "imperfect")}) and plays at the
behavioral policy's level ({e.m("discrete_bcq", "imperfect")}). On the final buffer, the whole replay of a
DQN that explored from epsilon 1, offline DQN learns ({e.m("dqn", "final")}, its estimate on the truth:
{e.q("dqn", "final")}) and discrete BCQ ends above the behavioral policy ({e.m("discrete_bcq", "final")}
against {e.m("behavioral", "final")}). What does not reproduce at this scale: on the imperfect buffer
discrete BCQ is level with BC ({e.m("discrete_bcq", "imperfect")} against {e.m("bc", "imperfect")}, their
CIs overlapping) and not above the behavioral policy; the paper has it above both. Two reasons show in the
figure and the data: discrete BCQ's and offline DQN's returns are still rising at {kilo(e.d["updates"])}
updates, where BC's curve is flat from the first evaluation; and epsilon-greedy data from a single
policy is what BC learns best: the greedy action is taken with probability 1 − ε + ε/|A| in every
state, so BC's most probable action is the behavioral policy's greedy one wherever the buffer reaches,
and BC plays as the behavioral policy does ({e.m("bc", "imperfect")} against {e.m("behavioral", "imperfect")}).
{discrete_cql_reading(e)}"""


def discrete_cql_reading(e: Extrapolation) -> str:
    """The discrete experiment's paragraph on discrete CQL; empty for a result from before it joined."""
    if "discrete_cql" not in e.t:
        return ""
    step, cql_final = e.first("discrete_cql", "final")
    _, cql_imperfect = e.first("discrete_cql", "imperfect")
    _, bcq_final = e.first("discrete_bcq", "final")
    _, bcq_imperfect = e.first("discrete_bcq", "imperfect")
    return f"""
Discrete CQL (the CQL(H) penalty, alpha 1, on Double DQN targets with the learners' MinAtar settings; Kumar et al.
2020) plays at the behavioral policy's level on both buffers ({e.m("discrete_cql", "imperfect")} on the imperfect
one, IQM {e.iqm("discrete_cql", "imperfect")}; {e.m("discrete_cql", "final")} on the final one), as discrete BCQ
and BC do, and far above offline DQN on the imperfect buffer. It learns the fastest of the three Q-learners: at
the first evaluation ({kilo(step)} updates) it plays {cql_imperfect} on the imperfect buffer and {cql_final} on the
final one, where discrete BCQ plays {bcq_imperfect} and {bcq_final}. Its value estimate is not below the truth, though
({e.q("discrete_cql", "imperfect")} on the imperfect buffer, {e.q("discrete_cql", "final")} on the final one):
the penalty log-sum-exp Q(s, ·) − Q(s, a) pushes Q(s, a) up, in expectation, wherever the data takes a more often
than the softmax of Q would, as epsilon-greedy data takes its greedy action, and CQL's bound is on the policy's
expected value for a large enough alpha, not on each action's Q (Kumar et al. 2020, Sec. 3.1-3.2).
"""
