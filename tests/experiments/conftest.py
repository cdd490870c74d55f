"""Tiny clips made by the tests themselves (32x32, 12 frames): nothing is downloaded."""
import subprocess

import pytest

from experiments import media
from tests.factories import TINY_SIZE, moving_square_frames


@pytest.fixture
def tiny_frames():
    return moving_square_frames()


@pytest.fixture
def tiny_clip(tmp_path, tiny_frames):
    path = tmp_path / "tiny.mp4"
    media.encode_browser_mp4(tiny_frames, path, fps=30)
    return path


@pytest.fixture
def vfr_clip_with_audio(tmp_path, tiny_frames):
    """A variable-frame-rate MP4 with an audio track, the kind ffmpeg's defaults mangle."""
    path = tmp_path / "vfr.mp4"
    command = [media.ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin",
               "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{TINY_SIZE}x{TINY_SIZE}",
               "-framerate", "30", "-i", "pipe:0",
               "-f", "lavfi", "-i", "sine=frequency=440:duration=2",
               # Irregular, increasing timestamps: gaps of 1, 2, 3 ... frame periods.
               "-vf", "setpts=(N*(N+1)/2)/30/TB", "-fps_mode", "passthrough",
               "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
               "-map", "0:v", "-map", "1:a", "-y", str(path)]
    subprocess.run(command, input=tiny_frames.tobytes(), check=True)
    return path
