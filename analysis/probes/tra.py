"""Temporal Reversal Asymmetry (TRA) of self-supervised video models.

TRA(v) = (L(reversed v) - L(v)) / L(v), where L is the model's prediction loss averaged
over sliding windows (16 frames, stride 2) in which the first C frames are context and the
rest are predicted (Vesesook & Yang, sec. 2 and Appendix A).  Positive TRA: reversed video
is harder to predict.

* VideoMAE (``VideoMAEForPreTraining``): pixel reconstruction of the masked tubes.  The mask
  is a function of token position only (all tubes after the context, plus an optional
  spatial tube mask repeated at every time step), so it is the same for a clip and its
  reverse: the loss difference comes from the order of the content, not from the mask.
* V-JEPA 2 (``VJEPA2Model``): the context tokens alone go through the encoder (the stock
  forward pass would encode the whole clip, leaking the targets into the context
  representations); the predictor predicts the target tokens' latents, compared by MSE with
  the layer-normalised encoder latents of the full clip.

Each clip is resized and normalised once; its windows, forward and reversed, go through the
model ``batch_size`` at a time, and V-JEPA 2 encodes each window's targets once for all
context lengths.  torch and transformers are imported when a probe is built, never at import
time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

CONTEXT_LENGTHS = (4, 6, 8, 10, 12, 14)  # TRA paper, Figure 4 / Tables 2-7
WINDOW, STRIDE = 16, 2
# Windows per forward pass.  A 48-frame clip has 17 windows each way; on CPU, batches of 8
# ran as fast as batches of 16 or 34 (bench/probe.py), and memory grows with the batch.
BATCH_SIZE = 8
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def tra(loss_forward: float, loss_reversed: float) -> float:
    """Temporal Reversal Asymmetry, eq. (1): ``(L_rev - L_fwd) / L_fwd``.

    Examples
    --------
    >>> tra(2.0, 2.5)
    0.25
    """
    if not loss_forward > 0:
        raise ValueError(f"forward loss must be positive, got {loss_forward}")
    return (loss_reversed - loss_forward) / loss_forward


def window_starts(n_frames: int, window: int = WINDOW, stride: int = STRIDE) -> list[int]:
    """First frame of each sliding window that fits in the clip.

    Examples
    --------
    >>> window_starts(20)
    [0, 2, 4]
    """
    if n_frames < window:
        raise ValueError(f"a clip of {n_frames} frames is shorter than the {window}-frame window")
    return list(range(0, n_frames - window + 1, stride))


@dataclass
class _Probe:
    """Shared preprocessing and the batched sliding-window loop; subclasses define
    ``batch_losses``."""

    model: Any  # a transformers model, imported only when a probe is built
    device: str
    size: int
    tubelet: int
    batch_size: int

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be at least 1 window, got {self.batch_size}")

    def pixels(self, frames: np.ndarray):
        """(T, H, W, 3) uint8 -> (T, 3, size, size) float, ImageNet-normalised."""
        import torch
        import torch.nn.functional as F

        x = torch.from_numpy(np.ascontiguousarray(frames)).float().div_(255).permute(0, 3, 1, 2)
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False,
                          antialias=True)
        mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        return ((x - mean) / std).to(self.device)

    def _check_context(self, context: int, window: int) -> None:
        if context % self.tubelet or not 0 < context < window:
            raise ValueError(f"context must be a multiple of {self.tubelet} in (0, {window}), "
                             f"got {context}")

    def clip_losses(self, frames: np.ndarray, context_lengths) -> list[tuple[float, float]]:
        """Mean window loss of the clip and of its reverse at each context length.

        The clip is resized and normalised once (frame by frame, so its reverse is the
        reversed tensor), and the windows of both directions go through the model
        ``batch_size`` at a time, each window's loss its own mean.
        """
        import torch

        for context in context_lengths:
            self._check_context(context, WINDOW)
        starts = window_starts(len(frames))
        pixels = self.pixels(frames)
        spans = [(clip, s) for clip in (pixels, pixels.flip(0)) for s in starts]
        losses = []
        for i in range(0, len(spans), self.batch_size):
            batch = torch.stack([clip[s:s + WINDOW] for clip, s in spans[i:i + self.batch_size]])
            losses.append(self.batch_losses(batch, context_lengths))
        per_window = torch.cat(losses, dim=1).double().cpu().numpy()  # (contexts, 2 x windows)
        n = len(starts)
        return [(float(np.mean(row[:n])), float(np.mean(row[n:]))) for row in per_window]

    def batch_losses(self, windows, context_lengths):
        """(contexts, B) losses of a (B, 16, 3, size, size) batch of windows."""
        raise NotImplementedError


class VideoMAEProbe(_Probe):
    """Pixel-reconstruction loss of ``VideoMAEForPreTraining`` on the post-context tubes."""

    def __init__(self, model, device: str = "cpu", spatial_mask_ratio: float = 0.0, seed: int = 0,
                 batch_size: int = BATCH_SIZE):
        config = model.config
        super().__init__(model.to(device).eval(), device, config.image_size, config.tubelet_size,
                         batch_size)
        if config.num_frames != WINDOW:
            raise ValueError(f"VideoMAE expects {config.num_frames} frames; windows have {WINDOW}")
        self.patch = config.patch_size
        grid = config.image_size // config.patch_size
        rng = np.random.default_rng(seed)
        # A spatial tube mask: the same patches hidden at every time step, hence unchanged by
        # time reversal.
        self.spatial = rng.random(grid * grid) < spatial_mask_ratio
        self.tokens_per_step = grid * grid

    def mask(self, context: int):
        """Boolean mask over tokens (True = hidden) for ``context`` context frames."""
        import torch

        steps = WINDOW // self.tubelet
        hidden = np.zeros((steps, self.tokens_per_step), bool)
        hidden[context // self.tubelet:] = True
        hidden[:context // self.tubelet] = self.spatial
        return torch.from_numpy(hidden.reshape(1, -1)).to(self.device)

    def tubes(self, windows):
        """The reconstruction targets of every tube, (B, tokens, values), as
        ``VideoMAEForPreTraining.forward`` builds its labels: the un-normalised pixels of each
        tube, standardised per tube and channel when ``config.norm_pix_loss``."""
        import torch

        mean = torch.tensor(IMAGENET_MEAN, device=windows.device).view(1, 1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD, device=windows.device).view(1, 1, 3, 1, 1)
        frames = windows * std + mean
        b, t, c, h, w = frames.shape
        ts, ps = self.tubelet, self.patch
        tubes = frames.view(b, t // ts, ts, c, h // ps, ps, w // ps, ps).permute(
            0, 1, 4, 6, 2, 5, 7, 3).reshape(b, -1, ts * ps * ps, c)
        if self.model.config.norm_pix_loss:
            tubes = (tubes - tubes.mean(dim=-2, keepdim=True)) / (
                tubes.var(dim=-2, unbiased=True, keepdim=True).sqrt() + 1e-6)
        return tubes.flatten(2)

    def batch_losses(self, windows, context_lengths):
        import torch

        losses = []
        with torch.no_grad():
            tubes = self.tubes(windows)
            for context in context_lengths:
                mask = self.mask(context).expand(len(windows), -1)
                # out.loss would average over the batch: each window's loss is computed here.
                logits = self.model(pixel_values=windows, bool_masked_pos=mask).logits
                labels = tubes[mask].view(logits.shape)
                losses.append((logits - labels).pow(2).mean(dim=(1, 2)))
        return torch.stack(losses)


class VJEPA2Probe(_Probe):
    """Latent-prediction loss of ``VJEPA2Model``, encoding the context tokens only."""

    def __init__(self, model, device: str = "cpu", batch_size: int = BATCH_SIZE):
        config = model.config
        super().__init__(model.to(device).eval(), device, config.crop_size, config.tubelet_size,
                         batch_size)
        self.tokens_per_step = (config.crop_size // config.patch_size) ** 2

    def batch_losses(self, windows, context_lengths):
        import torch

        target, predictions = self.predict(windows, context_lengths)
        return torch.stack([(predicted - target[:, -predicted.shape[1]:]).pow(2).mean(dim=(1, 2))
                            for predicted in predictions])

    def predict(self, windows, context_lengths):
        """Target latents of a batch of windows (B, tokens, hidden), layer-normalised, and the
        predicted latents of the post-context tokens at each context length.

        The targets do not depend on the context length: the full windows are encoded once.
        """
        import torch
        import torch.nn.functional as F

        b, t = windows.shape[:2]
        n_tokens = (t // self.tubelet) * self.tokens_per_step
        predictions = []
        with torch.no_grad():
            tokens = self.model.encoder.embeddings(windows)
            target = self._encode(tokens, None)
            target = F.layer_norm(target, target.shape[-1:])
            for context in context_lengths:
                n_context = (context // self.tubelet) * self.tokens_per_step
                context_ids = torch.arange(n_context, device=self.device).expand(b, -1)
                target_ids = torch.arange(n_context, n_tokens, device=self.device).expand(b, -1)
                # RoPE positions of the context tokens only: the targets stay unseen.
                hidden = self._encode(tokens[:, :n_context], context_ids)
                predictions.append(self.model.predictor(
                    encoder_hidden_states=hidden, context_mask=[context_ids],
                    target_mask=[target_ids]).last_hidden_state)
        return target, predictions

    def _encode(self, tokens, positions):
        """The encoder's layers and final norm over embedded ``tokens`` at ``positions``
        (None: the whole window, as ``VJEPA2Encoder.forward``)."""
        for layer in self.model.encoder.layer:
            tokens = layer(tokens, positions)[0]
        return self.model.encoder.layernorm(tokens)


def clip_tra_rows(probe: _Probe, frames: np.ndarray, *, model: str, clip_id: str,
                  context_lengths=CONTEXT_LENGTHS, **labels) -> list[dict]:
    """TRA of one clip at each context length, as rows of ``analysis.columns.TRA_COLUMNS``.

    Parameters
    ----------
    probe : VideoMAEProbe or VJEPA2Probe
    frames : ndarray, shape (T, H, W, 3), uint8
        The forward clip (T >= 16); its reverse is ``frames[::-1]``.
    model, clip_id : str
        Identifiers written into the rows.
    context_lengths : sequence of int
    **labels
        ``scenario``, ``process``, ``parameter``, ``parameter_value`` (optional).

    Returns
    -------
    list of dict
        One row per context length with ``loss_forward``, ``loss_reversed`` and ``tra``.
    """
    rows = []
    losses = probe.clip_losses(frames, context_lengths)
    for context, (forward, backward) in zip(context_lengths, losses):
        rows.append({"model": model, "clip_id": clip_id, "scenario": labels.get("scenario"),
                     "process": labels.get("process"), "parameter": labels.get("parameter"),
                     "parameter_value": labels.get("parameter_value"),
                     "context_frames": context, "loss_forward": forward,
                     "loss_reversed": backward, "tra": tra(forward, backward)})
    return rows


PROBES = {"videomae": ("VideoMAEForPreTraining", VideoMAEProbe),
          "vjepa2": ("VJEPA2Model", VJEPA2Probe)}


def load_probe(kind: str, model: str, device: str = "cpu", **options) -> _Probe:
    """A probe over a saved checkpoint (local folder or hub id) of ``kind``."""
    if kind not in PROBES:
        raise ValueError(f"kind must be one of {sorted(PROBES)}, got {kind!r}")
    import transformers

    class_name, probe = PROBES[kind]
    # transformers would otherwise build a randomly initialised model of ``kind`` from a
    # checkpoint of another type, with only a warning.
    model_type = transformers.AutoConfig.from_pretrained(model).model_type
    if model_type != kind:
        raise ValueError(f"{model} is a {model_type!r} checkpoint, not {kind!r}; "
                         f"choose --kind {model_type}" if model_type in PROBES else
                         f"{model} is a {model_type!r} checkpoint; the TRA probe takes "
                         f"{' or '.join(sorted(PROBES))} checkpoints")
    return probe(getattr(transformers, class_name).from_pretrained(model), device=device,
                 **options)
