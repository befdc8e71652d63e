"""Videos of a policy: rgb_array frames, a caption per frame, H.264 MP4 through imageio-ffmpeg.

`record_video` plays a policy (anything with `predict`, normaliser frozen) in an environment
made with `render_mode="rgb_array"` and streams each frame to ffmpeg, the binary that the
`imageio-ffmpeg` wheel ships, so nothing is installed by hand. Each frame carries a caption:
episode, step, the return so far and the task's episode metrics (the +y Ant task: its
y displacement in m). MuJoCo tasks with a `track` camera in their model (Ant, Hopper,
HalfCheetah, Walker2d) are filmed through it, so the camera follows the body's centre of mass.

Why not Gymnasium's `RecordVideo`: it keeps every frame of an episode in memory until the
episode ends (a 1,000-step Ant episode at 480 x 480 is 1001 x 691 kB = 692 MB) and writes one
file per episode through moviepy; here frames go to the encoder as they are drawn, and one
file holds all the episodes.

Headless rendering: with no `DISPLAY` and no `MUJOCO_GL` set, MuJoCo renders through EGL
(`MUJOCO_GL=egl`; Debian/Ubuntu packages libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri, software
rendering through Mesa when there is no GPU, about 124 ms a 480 x 480 Ant frame on one core here).
A MUJOCO_GL set to something else than egl, osmesa or glfw, or to a renderer whose library is
missing, is refused by `check_mujoco_gl` before mujoco is imported (with such a value its import
fails). The classic-control tasks draw with pygame.
"""

from __future__ import annotations

import ctypes.util
import functools
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from acrl.core.envs import env_family
from acrl.core.errors import InputError
from acrl.core.evaluation import EpisodeActor, episode_metric_names, seeded_torch
from acrl.core.files import atomic_path

GL_PACKAGES = "libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri"
"""The Debian/Ubuntu packages MuJoCo's offscreen EGL rendering needs (`./run setup` installs them)."""

MUJOCO_GL_RENDERERS = ("egl", "osmesa", "glfw")
"""The MUJOCO_GL values Gymnasium's MuJoCo renderer takes (glfw draws in a window: it needs a display)."""

MUJOCO_GL_LIBRARIES = {"egl": ("EGL", GL_PACKAGES), "osmesa": ("OSMesa", "libosmesa6")}
"""Offscreen renderer -> (the library PyOpenGL loads for it, the Debian/Ubuntu packages that have it)."""


def check_mujoco_gl() -> None:
    """Raise `InputError` when MUJOCO_GL names a renderer that cannot draw MuJoCo frames here.

    MuJoCo reads MUJOCO_GL when it is imported: a value it does not know, or osmesa without
    libOSMesa, makes `import mujoco` itself fail (a RuntimeError or AttributeError from deep in
    PyOpenGL), and Gymnasium's renderer takes only egl, osmesa or glfw (glx fails when the first
    frame is drawn). So the value and its library are checked here, without importing mujoco.
    Unset, it is fine (`render_env` picks egl when there is no display).

    Raises:
        InputError: MUJOCO_GL is not egl, osmesa or glfw, or its library is not installed;
            one line naming MUJOCO_GL and the packages to install.
    """
    backend = os.environ.get("MUJOCO_GL")
    if backend is None:
        return
    fix = f"unset it or set MUJOCO_GL=egl (offscreen; Debian/Ubuntu: apt-get install {GL_PACKAGES})"
    if backend not in MUJOCO_GL_RENDERERS:
        raise InputError(
            f"MUJOCO_GL={backend!r} is not a renderer Gymnasium's MuJoCo tasks can draw with "
            f"(egl, osmesa or glfw): {fix}."
        )
    library, packages = MUJOCO_GL_LIBRARIES.get(backend, (None, ""))
    if library is not None and ctypes.util.find_library(library) is None:
        raise InputError(
            f"MUJOCO_GL={backend} needs lib{library}, which is not installed: apt-get install {packages}, or {fix}."
        )


def ffmpeg_exe() -> str:
    """Path of the ffmpeg binary that imageio-ffmpeg ships.

    Raises:
        InputError: imageio-ffmpeg is missing or has no binary for this platform (one line
            naming the package to install).
    """
    try:
        import imageio_ffmpeg

        return imageio_ffmpeg.get_ffmpeg_exe()
    except (ImportError, RuntimeError) as exc:
        raise InputError(
            f"videos need ffmpeg: pip install imageio-ffmpeg (its wheel ships the binary); {exc}"
        ) from None


def render_env(env: Any) -> gym.Env:
    """A fresh copy of `env` that renders rgb_array frames (MuJoCo: through its `track` camera).

    Args:
        env: a registered Gymnasium id or its EnvSpec (one of an `acrl.core.envs.ENV_FAMILIES` namespace:
            the family's env, e.g. an ALE game preprocessed, whose `render()` is the emulator's RGB screen,
            with the spec's sticky actions), or an env made by `gym.make` (its spec, keyword arguments
            included, is made again with `render_mode="rgb_array"`).
    Raises:
        InputError: a custom environment factory or an unregistered env (it cannot be asked
            for frames), a MUJOCO_GL that cannot render (`check_mujoco_gl`), or an environment
            whose metadata lists no "rgb_array" render mode.
    """
    if isinstance(env, gym.envs.registration.EnvSpec):
        family, spec = env_family(env.id), env
    elif isinstance(env, str):
        family = env_family(env)  # registers its ids (ALE: imports ale_py)
        spec = gym.spec(env) if env in gym.registry else None
    else:
        family = None
        spec = env.spec if isinstance(env, gym.Env) else None
    if spec is None:
        raise InputError(
            f"cannot record {env!r}: videos need a registered Gymnasium id whose environment "
            "renders rgb_array frames (register the env with gymnasium.register)."
        )
    check_mujoco_gl()
    if "DISPLAY" not in os.environ:  # headless: MuJoCo's GL context through EGL, pygame without a window
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_NO_SIGNAL_HANDLERS", "1")  # pygame must not take over SIGINT and SIGTERM
    probe = gym.make(spec)
    modes = probe.metadata.get("render_modes", [])
    probe.close()
    if "rgb_array" not in modes:
        raise InputError(
            f"cannot record {spec.id}: it does not render rgb_array frames (its render modes: "
            f"{modes or 'none'}), so there is nothing to film. For an environment of your own, add "
            "'rgb_array' to its metadata['render_modes'] and return an (H, W, 3) uint8 array from render()."
        )
    if family is not None and family.make_env is not None:  # the env its id means (ALE: preprocessed)
        env = family.make_env(spec, "rgb_array")
    else:
        env = gym.make(spec, render_mode="rgb_array")
    renderer = getattr(env.unwrapped, "mujoco_renderer", None)
    if renderer is not None:
        import mujoco

        camera = mujoco.mj_name2id(env.unwrapped.model, mujoco.mjtObj.mjOBJ_CAMERA, "track")
        if camera >= 0:
            renderer.camera_id = camera  # a camera that follows the centre of mass (the model's own)
    return env


def first_frame(env: gym.Env, seed: int | None = None) -> tuple[Any, np.ndarray]:
    """Reset `env` with `seed` and render its first frame: (observation, frame (H, W, 3) uint8).

    Raises:
        InputError: rendering failed (no OpenGL/EGL library, no pygame): one line naming
            what to install, with the original error.
    """
    obs, _ = env.reset(seed=seed)
    try:
        frame = env.render()
    except Exception as exc:  # MuJoCo's GL context, PyOpenGL and pygame each fail in their own way
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if getattr(env.unwrapped, "mujoco_renderer", None) is not None:
            backend = os.environ.get("MUJOCO_GL")
            fix = f"MuJoCo renders offscreen through EGL: apt-get install {GL_PACKAGES}" + (
                f", and set MUJOCO_GL=egl (it is {backend!r})" if backend != "egl" else ""
            )
        else:
            fix = "Gymnasium's classic-control tasks draw with pygame: pip install pygame"
        raise InputError(f"cannot render {env.spec.id if env.spec else env}: {first}. {fix}.") from None
    if not (isinstance(frame, np.ndarray) and frame.ndim == 3 and frame.shape[2] == 3):
        raise InputError(
            f"cannot record: render() returned {type(frame).__name__} "
            f"{getattr(frame, 'shape', '')}, not an (H, W, 3) uint8 frame."
        )
    return obs, frame


def check_recording(env: Any) -> None:
    """Render one frame of `env`: raises the `InputError` that recording it would (no rgb_array, GL or ffmpeg)."""
    ffmpeg_exe()
    instance = render_env(env)
    try:
        first_frame(instance)
    finally:
        instance.close()


@functools.lru_cache
def _font(size: int) -> Any:
    from PIL import ImageFont

    return ImageFont.load_default(size=size)


def caption(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    """`frame` (H, W, 3) uint8 with `lines` of text in a dark box at its top left (a copy)."""
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image, "RGBA")
    font = _font(max(11, frame.shape[0] // 30))
    text = "\n".join(lines)
    box = draw.multiline_textbbox((6, 4), text, font=font)
    draw.rectangle((box[0] - 4, box[1] - 3, box[2] + 4, box[3] + 3), fill=(0, 0, 0, 150))
    draw.multiline_text((6, 4), text, font=font, fill=(255, 255, 255))
    return np.asarray(image)


@contextmanager
def mp4_writer(path: Path, size: tuple[int, int], fps: float) -> Iterator[Any]:
    """A generator that takes (H, W, 3) uint8 frames and encodes them to `path` (H.264, yuv420p).

    Written atomically (`acrl.core.files.atomic_path`: the hidden file ".NAME.tmp" beside `path`,
    renamed when the block ends without an exception): a failed or interrupted recording leaves
    no partial .mp4 (a killed process may leave the .tmp file, which nothing reads).
    `size` is (width, height).

    Raises:
        InputError: no ffmpeg (see `ffmpeg_exe`), or `path` cannot be written (its folder
            cannot be created or is not writable).
    """
    os.environ.setdefault("IMAGEIO_FFMPEG_EXE", ffmpeg_exe())
    import imageio_ffmpeg

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the video {path}: {exc}. Choose another --out.") from None
    with atomic_path(path) as tmp:
        try:
            tmp.touch()
        except OSError as exc:
            raise InputError(f"cannot write the video {path}: {exc}. Choose another --out.") from None
        writer = imageio_ffmpeg.write_frames(
            str(tmp),
            size,
            fps=fps,
            codec="libx264",
            pix_fmt_out="yuv420p",
            macro_block_size=2,
            ffmpeg_log_level="error",
            output_params=["-f", "mp4"],
        )  # the .tmp name says no container
        try:
            # ffmpeg starts with SIGINT and SIGTERM blocked: a signal whose handler raises (Ctrl-C, and
            # SIGTERM in `acrl record`) while the fork runs Python's at-fork callbacks would be lost
            # ("Exception ignored"); blocked, it is delivered right after. ffmpeg keeps the mask and
            # ends when its input closes.
            previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            try:
                writer.send(None)  # start ffmpeg
            finally:
                signal.pthread_sigmask(signal.SIG_SETMASK, previous)
            yield writer
        finally:  # an error or a signal (KeyboardInterrupt) anywhere above: atomic_path leaves no partial file
            writer.close()


def record_video(
    agent: Any,
    env: Any,
    path: str | Path,
    episodes: int = 1,
    deterministic: bool = True,
    seed: int | None = None,
    max_steps: int | None = None,
    keep_frames: bool = False,
) -> dict[str, Any]:
    """Play `episodes` episodes of `agent`'s policy and write them, one after another, to one MP4.

    The frame rate is the environment's `metadata["render_fps"]` (30 if it has none). There
    is one frame per reset and one per step, so an episode of T steps has T + 1 frames. As
    in `acrl.core.evaluation.evaluate`, the environment is reset with `seed` once and torch's
    generator is seeded from it on a forked state, so the same seed gives the same video.

    Args:
        agent: anything with `predict(obs, deterministic=...)` (an acrl agent: normaliser frozen; a
            recurrent one's state starts fresh with each episode, `acrl.core.evaluation.EpisodeActor`).
        env: a registered environment id or an env made by `gym.make` (see `render_env`).
        path: the .mp4 file to write (its folder is created; written atomically).
        episodes: episodes to play, >= 1.
        deterministic: the policy's mean/mode action (default) or sampled actions.
        seed: seed of the first reset (default: none).
        max_steps: cut each episode after this many steps (default: play it to its end).
        keep_frames: also return the frames, (T, H, W, 3) uint8, for a TensorBoard summary.
    Returns:
        path (str), returns (list, the undiscounted return of each episode, cut ones
        included), lengths (steps), frames (count), fps, size ([width, height]), the task's
        episode metrics per episode (`episode_metrics`, e.g. y_displacement), and with
        keep_frames, "video": the frames.
    Raises:
        InputError: episodes < 1 or max_steps < 1, or an environment that cannot be
            recorded (see `render_env`, `first_frame`, `ffmpeg_exe`).
    """
    if episodes < 1 or (max_steps is not None and max_steps < 1):
        raise InputError(f"episodes and max_steps must be >= 1, got episodes={episodes}, max_steps={max_steps}.")
    path = Path(path)
    env = render_env(env)
    metric_names = episode_metric_names(env)
    fps = float(env.metadata.get("render_fps") or 30)
    result: dict[str, Any] = {
        "path": str(path),
        "returns": [],
        "lengths": [],
        "frames": 0,
        "fps": fps,
        **{name: [] for name in metric_names},
    }
    kept: list[np.ndarray] = []
    actor = EpisodeActor(agent, deterministic)
    name = env.spec.id
    try:
        obs, frame = first_frame(env, seed)
        height, width = frame.shape[:2]
        result["size"] = [width, height]
        with seeded_torch(seed), mp4_writer(path, (width, height), fps) as writer:
            for episode in range(episodes):
                if episode:
                    obs, _ = env.reset()
                    frame = env.render()
                actor.reset()
                total, steps, info, done = 0.0, 0, {}, False
                while True:
                    lines = [f"{name}  episode {episode + 1}/{episodes}", f"step {steps}  return {total:.1f}"]
                    lines += [f"{key} {info.get(key, 0.0):+.2f}" for key in metric_names]
                    frame = caption(frame, lines)
                    writer.send(frame)
                    result["frames"] += 1
                    if keep_frames:
                        kept.append(frame)
                    if done or steps == max_steps:
                        break
                    obs, reward, terminated, truncated, info = env.step(actor(obs))
                    total += float(reward)
                    steps += 1
                    done = terminated or truncated
                    frame = env.render()
                result["returns"].append(total)
                result["lengths"].append(steps)
                for key in metric_names:
                    result[key].append(float(info.get(key, 0.0)))
    finally:
        env.close()
    if keep_frames:
        result["video"] = np.stack(kept)
    return result
