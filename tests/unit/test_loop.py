"""The run loop's contract on a scripted agent: when it evaluates and checkpoints, what callbacks
see and how they stop a run, lockstep runs, NaN checks, the progress bar's total."""

import contextlib
import copy
import csv
import json
import math
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from acrl.core.config import RunConfig
from acrl.core.errors import InputError, TrainingError
from acrl.core.logging import Logger
from acrl.core.loop import Callback, ConsoleReport, Run, check_finite, refreshing, train
from acrl.parts.stats import EpisodeStats


class ScriptedAgent:
    """A `Trainable` whose iteration takes `chunk` steps (cut at `max_steps` unless `whole`) and finishes an
    episode (its return the step it ends at, its length the steps taken), whose evaluation returns the
    scripted `returns` in turn, and whose checkpoints record their step."""

    algo = "scripted"
    env = "CartPole-v1"
    step_unit = "step"
    checkpoint_on_failure = False

    def __init__(self, total, eval_freq, checkpoint_freq=1000, chunk=7, whole=False, returns=None, metric=1.0):
        self.config = RunConfig(total_steps=total, eval_freq=eval_freq, checkpoint_freq=checkpoint_freq)
        self.num_steps, self.total_steps = 0, total
        self.best_eval = None
        self.nets = {"net": nn.Linear(1, 1)}
        self.chunk, self.whole, self.metric = chunk, whole, metric
        self.returns = iter(returns or [float(i) for i in range(100)])
        self.saved: list[tuple[str, int, bool]] = []
        self.evaluated: list[int] = []
        self.videos: list[int] = []
        self.episode_stats = EpisodeStats()

    def iteration(self, max_steps):
        taken = self.chunk if self.whole else min(self.chunk, max_steps)
        self.num_steps += taken
        if taken:
            self.episode_stats.add([float(self.num_steps)], [taken])
        return {"train/loss": self.metric}

    @contextlib.contextmanager
    def training(self):
        yield

    def snapshot(self):
        return self

    def evaluate(self):
        self.evaluated.append(self.num_steps)
        return {"return_mean": next(self.returns), "return_std": 0.0, "returns": [], "deterministic": True}

    def save(self, path, replay_buffer=True, run_files=None):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(str(self.num_steps))
        self.saved.append((path.name, self.num_steps, replay_buffer))

    def write_config(self, run_dir):
        run_dir.mkdir(parents=True, exist_ok=True)

    def record_video(self, path, max_steps=None, keep_frames=False):
        self.videos.append(self.num_steps)
        return {"video": np.zeros((2, 4, 4, 3), np.uint8), "fps": 30.0}


class Recorder(Callback):
    def __init__(self, stop_at=None):
        self.iterations, self.evaluations, self.stop_at = [], [], stop_at

    def on_iteration(self, step, metrics):
        self.iterations.append((step, metrics["train/loss"]))
        return self.stop_at is not None and step >= self.stop_at

    def on_evaluation(self, step, result):
        self.evaluations.append((step, result["return_mean"]))


def test_evaluation_points_checkpoints_and_callbacks(tmp_path):
    """Chunks of 7 cut at the multiples of eval_freq 10: steps 7, 10, 17, 20, 27, 30, 35; evaluations at
    10, 20, 30 and the final 35; latest.pt when a multiple of 15 is crossed (17, 30) and at the end;
    best.pt (without replay buffer) at each new best, here every evaluation (returns 0, 1, 2, 3)."""
    agent, recorder = ScriptedAgent(total=35, eval_freq=10, checkpoint_freq=15), Recorder()
    train([Run(agent, tmp_path, progress=False, callbacks=[recorder])])
    assert [step for step, _ in recorder.iterations] == [7, 10, 17, 20, 27, 30, 35]
    assert agent.evaluated == [10, 20, 30, 35]
    assert recorder.evaluations == [(10, 0.0), (20, 1.0), (30, 2.0), (35, 3.0)]
    assert agent.saved == [
        ("best.pt", 10, False),
        ("latest.pt", 17, True),
        ("best.pt", 20, False),
        ("best.pt", 30, False),
        ("latest.pt", 30, True),
        ("best.pt", 35, False),
        ("latest.pt", 35, True),
    ]
    assert json.loads((tmp_path / "eval.json").read_text())["return_mean"] == 3.0
    rows = (tmp_path / "metrics.csv").read_text().splitlines()
    assert len(rows) == 1 + 7  # one row per iteration: the final evaluation joins the last one
    assert (tmp_path / "learning_curve.png").exists()


def test_whole_iterations_evaluate_when_they_cross_a_multiple(tmp_path):
    """An agent that cannot cut its iteration (a PPO rollout of 6), budget 14, eval_freq 10: steps 6,
    12, 18, evaluated after 12 (crossing 10); at 18 only with a run directory (the final evaluation)."""
    agent = ScriptedAgent(total=14, eval_freq=10, chunk=6, whole=True)
    train([Run(agent, None, progress=False)])
    assert agent.num_steps == 18 and agent.evaluated == [12] and agent.saved == []
    agent = ScriptedAgent(total=14, eval_freq=10, chunk=6, whole=True)
    train([Run(agent, tmp_path, progress=False)])
    assert agent.evaluated == [12, 18]


def test_best_is_kept_only_on_improvement(tmp_path):
    agent = ScriptedAgent(total=30, eval_freq=10, returns=[5.0, 2.0, 7.0])
    train([Run(agent, tmp_path, progress=False)])
    assert [s for name, s, _ in agent.saved if name == "best.pt"] == [10, 30]
    assert agent.best_eval["step"] == 30 and agent.best_eval["return_mean"] == 7.0


def test_a_callback_stops_the_run_which_then_finishes_normally(tmp_path):
    """Stop after the iteration that reaches step 17: a final evaluation there, latest.pt, eval.json."""
    agent = ScriptedAgent(total=100, eval_freq=10)
    train([Run(agent, tmp_path, progress=False, callbacks=[Recorder(stop_at=15)])])
    assert agent.num_steps == 17 and agent.evaluated == [10, 17]
    assert agent.saved[-1] == ("latest.pt", 17, True)
    assert (tmp_path / "eval.json").exists()


def test_target_return_stops_at_the_first_evaluation_that_reaches_it(tmp_path):
    agent = ScriptedAgent(total=100, eval_freq=10, returns=[1.0, 4.0, 9.0])
    agent.config.target_return = 4.0
    train([Run(agent, tmp_path, progress=False)])
    assert agent.num_steps == 20 and agent.evaluated == [10, 20]


def test_runs_in_lockstep_stay_on_the_same_step():
    first, second = ScriptedAgent(total=25, eval_freq=10), ScriptedAgent(total=25, eval_freq=10)
    order = []

    class Order(Callback):
        def __init__(self, name):
            self.name = name

        def on_iteration(self, step, metrics):
            order.append((self.name, step))

    train([Run(first, None, False, [Order("a")]), Run(second, None, False, [Order("b")])])
    assert order == [(name, step) for step in (7, 10, 17, 20, 25) for name in "ab"]


def test_lockstep_runs_write_their_checkpoints_together_after_the_round(tmp_path):
    """Two runs with checkpoint_freq 10 (chunks of 7: 7, 14, 21): the second's iteration fails in the round
    that reaches 21. Both keep latest.pt of step 14, so the pair resumes from one step; had the first written
    its checkpoint straight after its own iteration, it would be at 21 and the second at 14."""
    first, second = ScriptedAgent(total=40, eval_freq=0, checkpoint_freq=10), ScriptedAgent(total=40, eval_freq=0)
    second.config.checkpoint_freq = 10
    fail = second.iteration

    def iteration(max_steps):
        if second.num_steps == 14:
            raise RuntimeError("killed")
        return fail(max_steps)

    second.iteration = iteration
    with pytest.raises(RuntimeError, match="killed"):
        train([Run(first, tmp_path / "a", progress=False), Run(second, tmp_path / "b", progress=False)])
    assert first.num_steps == 21 and second.num_steps == 14
    assert (tmp_path / "a" / "checkpoints" / "latest.pt").read_text() == "14"
    assert (tmp_path / "b" / "checkpoints" / "latest.pt").read_text() == "14"


@pytest.mark.parametrize("where", ["metric", "parameter"])
def test_non_finite_values_stop_the_run_naming_step_and_quantity(tmp_path, where):
    agent = ScriptedAgent(total=50, eval_freq=0, metric=math.nan if where == "metric" else 1.0)
    if where == "parameter":
        with torch.no_grad():
            agent.nets["net"].bias.fill_(math.inf)
    pattern = "step 7: train/loss is nan" if where == "metric" else "step 7: parameter net.bias is not finite"
    with pytest.raises(TrainingError, match=pattern):
        train([Run(agent, tmp_path, progress=False)])
    assert agent.saved == []  # the last good checkpoint is kept: nothing new is written


def test_progress_bar_keeps_a_total_past_the_budget(capsys):
    """A last whole rollout past the budget of 10: the bar ends at 16/16, in updates, with its label."""
    logger = Logger(None, 10, progress=True, unit="update", label="bcq on final")
    logger.log(16, {"time/fps": 1.0})
    logger.close()
    final = capsys.readouterr().err.split("\r")[-1]
    assert final.startswith("bcq on final: 100%") and "| 16/16 updates [" in final and "updates/s=1]" in final


def test_the_bar_spaces_its_unit_from_the_count_and_shows_the_rate_once(capsys):
    """65,536 steps, 12,000 of them taken at 12,345.6 steps a second, returns 162.04 and 0.0483: the count
    with its unit apart ("65536step" ran them together), the loop's fps rounded, returns as the console's."""
    logger = Logger(None, 65_536, progress=True)
    logger.log(12_000, {"time/fps": 12_345.6, "rollout/ep_return_mean": 162.04, "eval/return_mean": 0.04834})
    logger.bar.refresh()
    line = capsys.readouterr().err.split("\r")[-1]
    logger.close()
    assert "| 12,000/65,536 steps [" in line, line
    assert line.rstrip().endswith(", fps=12,346, return=162.0, eval=0.048]"), line
    assert "step/s" not in line and "steps/s" not in line  # tqdm's own rate: fps says it


def test_the_start_line_is_written_above_the_progress_bar_not_onto_it(tmp_path, capsys):
    report = ConsoleReport("training scripted -> here")
    train([Run(ScriptedAgent(total=20, eval_freq=10), tmp_path, callbacks=[report])])
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    assert "training scripted -> here" in lines, lines  # a line of its own: tqdm cleared the bar first


def test_the_finite_check_never_reads_a_parameter_while_another_process_writes_it(monkeypatch):
    """`torch.isfinite` reads each element twice (x == x): a worker's write between the two reads made a
    finite parameter look like NaN (a false stop). Here that write happens inside every isfinite call,
    deterministically: a NaN lands in the live parameter. The check must be reading a copy that nothing
    changes (the agent's snapshot, frozen for an agent trained by other processes, or a clone)."""
    net = nn.Linear(2, 2)
    agent = ScriptedAgent(total=10, eval_freq=0)
    agent.nets = {"net": net}
    agent.snapshot = lambda: SimpleNamespace(nets={"net": copy.deepcopy(net)})
    real = torch.isfinite

    def torn(tensor):
        with torch.no_grad():
            net.weight.fill_(math.nan)  # the write between two reads
        return real(tensor)

    monkeypatch.setattr(torch, "isfinite", torn)
    check_finite(agent, {})
    assert math.isnan(net.weight[0, 0].item())  # the write did happen, and was not read


def test_a_new_run_refuses_a_directory_that_holds_one_and_a_resumed_run_continues_there(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest.pt").write_text("an earlier run")
    (tmp_path / "metrics.csv").write_text("step\n7\n")
    with pytest.raises(InputError, match="already holds a run; continue it with `acrl resume"):
        Run(ScriptedAgent(total=10, eval_freq=0), tmp_path, progress=False)
    assert (tmp_path / "metrics.csv").read_text() == "step\n7\n"
    resumed = ScriptedAgent(total=20, eval_freq=0)
    resumed.num_steps = 10  # as `acrl.load` leaves it
    train([Run(resumed, tmp_path, progress=False)])
    assert resumed.num_steps == 20


def test_sessions_json_records_each_session_of_a_resumed_run(tmp_path):
    """Two sessions, 0 -> 10 and 10 -> 20 steps (a result that spans sessions records each one's steps, commit,
    CPU and load); the second appends to the first's record."""
    train([Run(ScriptedAgent(total=10, eval_freq=0), tmp_path, progress=False)])
    resumed = ScriptedAgent(total=20, eval_freq=0)
    resumed.num_steps = 10
    train([Run(resumed, tmp_path, progress=False)])
    record = json.loads((tmp_path / "sessions.json").read_text())
    assert list(record) == ["train"]
    first, second = record["train"]
    assert (first["start_step"], first["end_step"], second["start_step"], second["end_step"]) == (0, 10, 10, 20)
    for entry in (first, second):
        assert entry["started"] <= entry["ended"] and "commit" in entry and entry["cores"] >= 1
        assert len(entry["load_average_start"]) == len(entry["load_average_end"]) == 3
    assert first["ended"] <= second["started"]


def test_videos_come_every_video_freq_th_evaluation_when_a_rollout_crosses_several_points(tmp_path, monkeypatch):
    """Whole rollouts of 192 steps with eval_freq 64: each crosses three evaluation points and is
    evaluated once, 7 evaluations in 1,344 steps. video_freq 3 films the 3rd and the 6th (steps 576 and
    1,152); counting multiples of eval_freq instead filmed all 7 (192 // 64 = 3, 384 // 64 = 6, ...)."""
    monkeypatch.setattr("acrl.core.video.check_recording", lambda env: None)
    agent = ScriptedAgent(total=1344, eval_freq=64, chunk=192, whole=True)
    agent.config.video_freq = 3
    train([Run(agent, tmp_path, progress=False)])
    assert agent.evaluated == [192 * k for k in range(1, 8)]
    assert agent.videos == [576, 1152]


def test_a_resumed_run_counts_its_earlier_evaluations_and_seconds(tmp_path, monkeypatch):
    """metrics.csv kept from the first session: 2 evaluations, and 1,000 s at step 20. The resumed
    session's 3rd evaluation films with video_freq 3 (at step 30), and time/elapsed_s goes on from 1,000."""
    monkeypatch.setattr("acrl.core.video.check_recording", lambda env: None)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest.pt").write_text("20")
    (tmp_path / "metrics.csv").write_text("step,eval/return_mean,time/elapsed_s\n10,1.0,500.0\n20,2.0,1000.0\n")
    agent = ScriptedAgent(total=50, eval_freq=10, chunk=10)
    agent.num_steps, agent.config.video_freq = 20, 3
    train([Run(agent, tmp_path, progress=False)])
    assert agent.evaluated == [30, 40, 50] and agent.videos == [30]
    with (tmp_path / "metrics.csv").open() as f:
        elapsed = [float(row["time/elapsed_s"]) for row in csv.DictReader(f)]
    assert elapsed[:2] == [500.0, 1000.0] and all(1000.0 <= e < 1060.0 for e in elapsed[2:]), elapsed
    assert elapsed[2:] == sorted(elapsed[2:])


class OwnClockAgent(ScriptedAgent):
    """A ScriptedAgent that, as A3C, reports its own time/elapsed_s (1 s per iteration this session) and takes
    3 more steps while `training()` closes (its workers finishing their rollouts)."""

    def iteration(self, max_steps):
        metrics = super().iteration(max_steps)
        self.clock += 1.0
        return {**metrics, "time/elapsed_s": self.clock}

    @contextlib.contextmanager
    def training(self):
        self.clock = 0.0
        yield
        self.num_steps += 3


def test_the_row_of_the_steps_taken_as_training_closes_counts_the_earlier_sessions_seconds(tmp_path):
    """A session resumed at step 20 after 1,000 s, stopped at 40: its last row (the 3 steps taken while its
    training closed, at step 43) is at 1,000 s plus its own 3 iterations' seconds, as the rows before it, so
    that a second resume goes on from there."""
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "latest.pt").write_text("20")
    (tmp_path / "metrics.csv").write_text("step,eval/return_mean,time/elapsed_s\n10,1.0,500.0\n20,2.0,1000.0\n")
    agent = OwnClockAgent(total=100, eval_freq=1000, chunk=10)
    agent.num_steps = 20
    train([Run(agent, tmp_path, progress=False, callbacks=[Recorder(stop_at=40)])])
    with (tmp_path / "metrics.csv").open() as f:
        rows = [(int(row["step"]), float(row["time/elapsed_s"])) for row in csv.DictReader(f)]
    assert rows == [(10, 500.0), (20, 1000.0), (30, 1001.0), (40, 1002.0), (43, 1003.0)]


def test_eval_json_names_the_best_step_and_holds_the_last_evaluation(tmp_path):
    """Returns 5, 2, 1 at steps 10, 20, 30: best.pt is step 10's; the run ended on 1.0 at step 30."""
    agent = ScriptedAgent(total=30, eval_freq=10, returns=[5.0, 2.0, 1.0])
    train([Run(agent, tmp_path, progress=False)])
    result = json.loads((tmp_path / "eval.json").read_text())
    assert (result["return_mean"], result["step"], result["checkpoint"]) == (5.0, 10, "checkpoints/best.pt")
    assert (result["last"]["return_mean"], result["last"]["step"], result["resumed_at"]) == (1.0, 30, None)


def test_a_run_stopped_early_says_so_on_its_model_card(tmp_path):
    train([Run(ScriptedAgent(total=100, eval_freq=10), tmp_path, progress=False, callbacks=[Recorder(stop_at=15)])])
    card = (tmp_path / "README.md").read_text()
    assert "budget 100 environment steps (stopped early at 17)" in card
    assert "last evaluation during training, step 17" in card


def test_console_report_announces_the_start_and_prints_a_line_per_evaluation(tmp_path, capsys):
    agent = ScriptedAgent(total=20, eval_freq=10, returns=[1.5, 2.5])
    train([Run(agent, tmp_path, progress=False, callbacks=[ConsoleReport("training scripted -> here")])])
    assert capsys.readouterr().err.splitlines() == [
        "training scripted -> here",
        "step 10: eval return 1.500 +/- 0.000 (0 episodes)",
        "step 20: eval return 2.500 +/- 0.000 (0 episodes)",
    ]
    ConsoleReport(evaluations=False).on_evaluation(30, {"return_mean": 1.0, "return_std": 0.0, "returns": []})
    assert capsys.readouterr().err == ""


def test_the_progress_bar_follows_the_steps_inside_an_iteration():
    """The refresher moves the bar to num_steps while an iteration runs, with no row."""
    logger = Logger(None, 100, progress=True)
    agent = ScriptedAgent(total=100, eval_freq=0)
    with refreshing(logger, agent, interval=0.01):
        agent.num_steps = 40
        deadline = time.monotonic() + 30
        while logger.bar.n != 40 and time.monotonic() < deadline:
            time.sleep(0.01)
    assert logger.bar.n == 40 and logger.rows == []
    logger.log(60, {"time/fps": 1.0})
    assert logger.bar.n == 60
    logger.close()
    assert not [t for t in threading.enumerate() if t.name == "acrl-progress"]


def test_console_returns_keep_three_decimals_below_10():
    """POPGym's returns lie in [-1, 1]: 0.0475 must not print as 0.0; large returns keep one decimal; 9.9996 is
    below 10, so three decimals (rounding up to 10.000)."""
    from acrl.core.logging import format_return

    assert [format_return(v) for v in (0.0475, -0.2641, 9.9996, 162.04, -1234.56)] == [
        "0.048",
        "-0.264",
        "10.000",
        "162.0",
        "-1,234.6",
    ]


def test_each_training_episode_is_written_to_episodes_csv_at_the_step_of_its_iteration(tmp_path):
    """Iterations of 7 steps to 20, evaluating every 10: they end at 7, 10 (cut at the evaluation), 17 and
    20, each finishing an episode whose return is that step."""
    agent = ScriptedAgent(total=20, eval_freq=10, chunk=7)
    train([Run(agent, tmp_path, progress=False)])
    assert (tmp_path / "episodes.csv").read_text() == (
        "step,episode,return,length\n7,1,7.0,7\n10,2,10.0,3\n17,3,17.0,7\n20,4,20.0,3\n"
    )


def test_a_resumed_logger_keeps_the_episodes_up_to_its_step_and_numbers_on(tmp_path):
    logger = Logger(tmp_path, 100, progress=False)
    logger.log_episodes(10, [(1.0, 5), (2.0, 5)])
    logger.log_episodes(20, [(3.0, 10)])
    logger.close()
    resumed = Logger(tmp_path, 100, start_step=10, progress=False)  # latest.pt was written at step 10
    resumed.log_episodes(15, [(4.5, 5)])
    resumed.close()
    assert (tmp_path / "episodes.csv").read_text() == "step,episode,return,length\n10,1,1.0,5\n10,2,2.0,5\n15,3,4.5,5\n"


def test_episode_stats_hand_each_finished_episode_over_once_and_not_those_a_checkpoint_restores():
    stats = EpisodeStats(window=2)
    stats.add([1.0, 2.0, 3.0], [4, 5, 6])
    assert stats.take_finished() == [(1.0, 4.0), (2.0, 5.0), (3.0, 6.0)]  # all, though the window keeps 2
    assert stats.take_finished() == []
    restored = EpisodeStats(window=2)
    restored.load_state_dict(stats.state_dict())
    assert restored.metrics()["rollout/ep_return_mean"] == 2.5 and restored.take_finished() == []
