"""Tiny synthetic clips for the model tests."""
import numpy as np


def moving_square(n_frames=24, height=32, width=48, seed=0):
    """A bright square moving right over a noisy background (uint8 RGB)."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 60, (n_frames, height, width, 3)).astype(np.uint8)
    for t in range(n_frames):
        frames[t, 8:16, 2 + t:10 + t] = 250
    return frames


def write_lossless(frames, path, fps=12):
    """An FFV1 (lossless) file: decoded frames equal the written ones exactly."""
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("ffv1", rate=fps)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "bgr0"
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    return str(path)
