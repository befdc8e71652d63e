"""Videos (`acrl record`, `video_freq`) and the run's model card, checked by decoding what was written."""

from __future__ import annotations

import ctypes.util
import io
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys

import gymnasium as gym
import imageio_ffmpeg
import numpy as np
import pytest
import tyro
import yaml
from PIL import Image

from acrl import PPO
from acrl.cli import Command, build_agent, main
from acrl.core.errors import InputError
from acrl.core.video import first_frame, record_video
from tests.conftest import ROOT, ConstantRewardEnv, signal_when_ready

NO_RENDER_ID = "acrl-test/ConstantReward-v0"
if NO_RENDER_ID not in gym.registry:  # renders nothing: its metadata lists no render modes
    gym.register(NO_RENDER_ID, entry_point=ConstantRewardEnv, max_episode_steps=5)


def decode(path) -> tuple[dict, np.ndarray]:
    """(ffmpeg's metadata, frames (T, H, W, 3) uint8) of an MP4, read back by imageio-ffmpeg's ffmpeg."""
    reader = imageio_ffmpeg.read_frames(str(path))
    meta = next(reader)
    width, height = meta["size"]
    frames = np.stack([np.frombuffer(f, np.uint8).reshape(height, width, 3) for f in reader])
    return meta, frames


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory):
    """A PPO CartPole run of 256 steps: evaluations every 64, a 12-step clip at every 2nd one."""
    run_dir = tmp_path_factory.mktemp("video") / "run"
    PPO(
        "CartPole-v1",
        seed=0,
        n_steps=64,
        batch_size=32,
        n_epochs=1,
        eval_freq=64,
        eval_episodes=2,
        video_freq=2,
        video_length=12,
    ).learn(256, run_dir=run_dir, progress=False)
    return run_dir


def test_video_freq_writes_a_clip_at_every_second_evaluation_and_a_tensorboard_video(cartpole_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    clips = sorted(p.name for p in (cartpole_run / "videos").glob("*.mp4"))
    assert clips == ["step-000000128.mp4", "step-000000256.mp4"]  # evaluations 2 and 4 of 64, 128, 192, 256
    events = EventAccumulator(str(cartpole_run), size_guidance={"images": 0})
    events.Reload()
    videos = events.Images("eval/video")
    assert [v.step for v in videos] == [128, 256]
    for clip, video in zip(clips, videos):
        meta, frames = decode(cartpole_run / "videos" / clip)
        assert meta["codec"] == "h264" and meta["fps"] == 50  # CartPole's render_fps
        assert 2 <= len(frames) <= 13  # one episode, cut after 12 steps: at most 13 frames
        gif = Image.open(io.BytesIO(video.encoded_image_string))
        assert gif.format == "GIF" and gif.n_frames == len(frames) and gif.size == (300, 200)  # half 600 x 400


def test_record_writes_the_evaluated_episodes_frame_by_frame(cartpole_run, tmp_path, capsys):
    assert main(["evaluate", str(cartpole_run), "--episodes", "2"]) == 0
    lengths = json.loads(capsys.readouterr().out)["lengths"]  # the same seed (seed + 10000) as record's default
    out = tmp_path / "cartpole.mp4"
    assert main(["record", str(cartpole_run), "--episodes", "2", "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    meta, frames = decode(out)
    assert len(frames) == sum(length + 1 for length in lengths)  # a frame per reset and one per step
    assert frames.shape[1:] == (400, 600, 3) and meta["codec"] == "h264"
    assert np.abs(frames[1:].astype(int) - frames[:-1]).max() > 50  # the pole moves: not one still image
    assert summary["lengths"] == lengths and summary["path"] == str(out)


def test_record_names_the_default_file_after_the_return(cartpole_run, capsys):
    assert main(["record", str(cartpole_run), "--max-steps", "5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["path"] == str(cartpole_run / "videos" / "best-seed10000-max5-return5.0.mp4")  # 1 a step
    assert len(decode(summary["path"])[1]) == 6


def test_record_a_short_ant_episode_offscreen(tmp_path):
    agent = PPO("Ant-v5", seed=0)
    result = record_video(agent, "Ant-v5", tmp_path / "ant.mp4", max_steps=10, seed=0)
    meta, frames = decode(tmp_path / "ant.mp4")
    assert frames.shape == (11, 480, 480, 3) and meta["fps"] == 20  # Ant-v5: dt 0.05 s
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 1  # the legs move
    assert result["lengths"] == [10] and result["size"] == [480, 480]


def test_model_card_reports_the_run_and_a_command_that_rebuilds_its_config(cartpole_run, capsys):
    card = (cartpole_run / "README.md").read_text()
    best = json.loads((cartpole_run / "eval.json").read_text())
    assert card.startswith("# PPO on CartPole-v1, seed 0")
    assert f"| 2 | {best['return_mean']:.1f} | {best['return_std']:.1f} |" in card
    assert "![learning curve](learning_curve.png)" in card and "videos/" in card
    command = card.split("```\n")[1].strip()
    rebuilt = build_agent(tyro.cli(Command, args=shlex.split(command)[1:])).config.to_dict()  # as `acrl train` does
    saved = yaml.safe_load((cartpole_run / "config.yaml").read_text())["config"]
    # Every value is rebuilt; only the label differs: the CLI applies CartPole's `default` preset, which
    # this library-made run did not (so the preset's values that it does not share come as --set).
    assert (saved.pop("preset"), rebuilt.pop("preset")) == ("", "default")
    assert rebuilt == saved

    assert main(["evaluate", str(cartpole_run), "--episodes", "3", "--seed", "7"]) == 0
    result = json.loads(capsys.readouterr().out)
    card = (cartpole_run / "README.md").read_text()
    assert "`acrl evaluate` of best.pt, seed 7" in card and f"| 3 | {result['return_mean']:.1f} |" in card


def test_the_card_after_a_resume_gives_the_resumed_budget(cartpole_run, tmp_path, capsys):
    """`acrl evaluate` loads best.pt, whose config has the budget it was saved with; the card takes
    the run's config.yaml, which a resume rewrites (here as `acrl resume --total-steps 512` does)."""
    run_dir = tmp_path / "run"
    shutil.copytree(cartpole_run, run_dir)
    saved = yaml.safe_load((run_dir / "config.yaml").read_text())
    saved["config"]["total_steps"] = 512
    (run_dir / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=False))
    assert main(["evaluate", str(run_dir), "--episodes", "1"]) == 0
    capsys.readouterr()
    card = (run_dir / "README.md").read_text()
    assert "budget 512 environment steps" in card and "--total-steps 512" in card


def test_an_environment_without_rgb_array_is_refused_before_anything_is_written(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = main(
        [
            "train",
            "ppo",
            "--env",
            NO_RENDER_ID,
            "--video-freq",
            "1",
            "--total-steps",
            "64",
            "--set",
            "n_steps=32",
            "batch_size=16",
            "eval_freq=32",
            "--run-dir",
            str(run_dir),
            "--no-progress",
        ]
    )
    assert code == 2 and "does not render rgb_array" in capsys.readouterr().err and not run_dir.exists()
    assert (
        main(
            [
                "train",
                "ppo",
                "--env",
                NO_RENDER_ID,
                "--total-steps",
                "64",
                "--set",
                "n_steps=32",
                "batch_size=16",
                "eval_freq=32",
                "--run-dir",
                str(run_dir),
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["record", str(run_dir)]) == 2
    assert "does not render rgb_array" in capsys.readouterr().err
    assert not (run_dir / "videos").exists()


def test_video_freq_needs_evaluations():
    with pytest.raises(InputError, match="needs eval_freq > 0"):
        PPO("CartPole-v1", video_freq=1, eval_freq=0)


def test_a_missing_ffmpeg_names_the_package(tmp_path, monkeypatch):
    def no_binary():
        raise RuntimeError("No ffmpeg exe could be found.")

    monkeypatch.setattr(imageio_ffmpeg, "get_ffmpeg_exe", no_binary)
    with pytest.raises(InputError, match="pip install imageio-ffmpeg"):
        record_video(PPO("CartPole-v1"), "CartPole-v1", tmp_path / "x.mp4")
    assert not list(tmp_path.iterdir())


def test_a_failed_gl_context_names_the_packages():
    class NoGL(gym.Wrapper):
        def render(self):
            raise RuntimeError("an OpenGL platform library has not been loaded into this process")

    with pytest.raises(InputError, match="apt-get install libegl1 libegl-mesa0 libgl1"):
        first_frame(NoGL(gym.make("Ant-v5", render_mode="rgb_array")))


def test_a_failed_recording_leaves_no_video(tmp_path):
    class Breaks:
        steps = 0

        def predict(self, obs, deterministic=True):
            self.steps += 1
            if self.steps == 5:
                raise RuntimeError("policy failed")
            return 0

    with pytest.raises(RuntimeError, match="policy failed"):
        record_video(Breaks(), "CartPole-v1", tmp_path / "x.mp4")
    assert list(tmp_path.iterdir()) == []  # neither x.mp4 nor its hidden .tmp file


def test_an_unwritable_out_is_one_error_line(cartpole_run, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    assert main(["record", str(cartpole_run), "--out", str(tmp_path / "file" / "x.mp4")]) == 2
    assert "cannot write the video" in capsys.readouterr().err
    assert main(["record", str(cartpole_run), "--seed", "-1"]) == 2
    assert "--seed must be >= 0" in capsys.readouterr().err


def test_evaluate_the_latest_checkpoint(cartpole_run, tmp_path, capsys):
    run_dir = tmp_path / "run"
    shutil.copytree(cartpole_run, run_dir)
    assert main(["evaluate", str(run_dir), "--checkpoint", "latest", "--episodes", "1"]) == 0
    capsys.readouterr()
    assert json.loads((run_dir / "evaluate.json").read_text())["checkpoint"] == "latest.pt"


@pytest.fixture(scope="module")
def mujoco_run(tmp_path_factory):
    """A PPO InvertedPendulum-v5 run of 32 steps (a MuJoCo task: loading it imports mujoco)."""
    run_dir = tmp_path_factory.mktemp("mujoco") / "run"
    PPO("InvertedPendulum-v5", seed=0, n_steps=32, batch_size=16, n_epochs=1, eval_freq=32, eval_episodes=1).learn(
        32, run_dir=run_dir, progress=False
    )
    return run_dir


@pytest.mark.parametrize("backend", ["bogus", "glx"])
def test_a_bad_mujoco_gl_is_one_error_line(mujoco_run, tmp_path, backend):
    """bogus: `import mujoco` itself fails (in a fresh process, where it is not yet imported); glx: MuJoCo
    imports, but Gymnasium's renderer refuses it (and its half-made viewer printed "Exception ignored")."""
    out = tmp_path / "x.mp4"
    proc = subprocess.run(
        [sys.executable, "-m", "acrl", "record", str(mujoco_run), "--max-steps", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "MUJOCO_GL": backend},
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        proc.stderr.startswith(f"acrl: error: MUJOCO_GL='{backend}' is not a renderer") and proc.stderr.count("\n") == 1
    ), proc.stderr
    assert "apt-get install libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri" in proc.stderr
    assert not out.exists() and proc.stdout == ""


def test_osmesa_without_its_library_is_refused_before_training(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MUJOCO_GL", "osmesa")
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)  # as on a machine without libOSMesa
    run_dir = tmp_path / "run"
    assert (
        main(
            [
                "train",
                "ppo",
                "--env",
                "InvertedPendulum-v5",
                "--video-freq",
                "1",
                "--total-steps",
                "32",
                "--run-dir",
                str(run_dir),
                "--no-progress",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert (
        err.startswith(
            "acrl: error: MUJOCO_GL=osmesa needs libOSMesa, which is not installed: apt-get install libosmesa6"
        )
        and err.count("\n") == 1
    ), err
    assert not run_dir.exists()


def test_sigterm_stops_a_recording_like_ctrl_c(cartpole_run, tmp_path):
    out = tmp_path / "long.mp4"
    proc = subprocess.Popen(
        [sys.executable, "-m", "acrl", "record", str(cartpole_run), "--episodes", "200", "--out", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    stderr = signal_when_ready(proc, lambda: (tmp_path / ".long.mp4.tmp").exists(), signal.SIGTERM)
    assert proc.returncode == 130, stderr
    assert list(tmp_path.iterdir()) == []
