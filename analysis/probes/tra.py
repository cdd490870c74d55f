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

torch and transformers are imported when a probe is built, never at import time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

CONTEXT_LENGTHS = (4, 6, 8, 10, 12, 14)  # TRA paper, Figure 4 / Tables 2-7
WINDOW, STRIDE = 16, 2
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
    """Shared preprocessing and the sliding-window loop; subclasses define ``window_loss``."""

    model: Any  # a transformers model, imported only when a probe is built
    device: str
    size: int
    tubelet: int

    def _tensor(self, frames: np.ndarray):
        """(T, H, W, 3) uint8 -> (1, T, 3, size, size) float, ImageNet-normalised."""
        import torch
        import torch.nn.functional as F

        x = torch.from_numpy(np.ascontiguousarray(frames)).float().div_(255).permute(0, 3, 1, 2)
        x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", align_corners=False,
                          antialias=True)
        mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
        return ((x - mean) / std).unsqueeze(0).to(self.device)

    def _check_context(self, context: int, window: int) -> None:
        if context % self.tubelet or not 0 < context < window:
            raise ValueError(f"context must be a multiple of {self.tubelet} in (0, {window}), "
                             f"got {context}")

    def clip_loss(self, frames: np.ndarray, context: int, window: int = WINDOW,
                  stride: int = STRIDE) -> float:
        """Mean window loss over the clip's sliding windows."""
        self._check_context(context, window)
        losses = [self.window_loss(frames[s:s + window], context)
                  for s in window_starts(len(frames), window, stride)]
        return float(np.mean(losses))

    def window_loss(self, frames: np.ndarray, context: int) -> float:
        raise NotImplementedError


class VideoMAEProbe(_Probe):
    """Pixel-reconstruction loss of ``VideoMAEForPreTraining`` on the post-context tubes."""

    def __init__(self, model, device: str = "cpu", spatial_mask_ratio: float = 0.0, seed: int = 0):
        config = model.config
        super().__init__(model.to(device).eval(), device, config.image_size, config.tubelet_size)
        if config.num_frames != WINDOW:
            raise ValueError(f"VideoMAE expects {config.num_frames} frames; windows have {WINDOW}")
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

    def window_loss(self, frames: np.ndarray, context: int) -> float:
        import torch

        with torch.no_grad():
            out = self.model(pixel_values=self._tensor(frames), bool_masked_pos=self.mask(context))
        return float(out.loss)


class VJEPA2Probe(_Probe):
    """Latent-prediction loss of ``VJEPA2Model``, encoding the context tokens only."""

    def __init__(self, model, device: str = "cpu"):
        config = model.config
        super().__init__(model.to(device).eval(), device, config.crop_size, config.tubelet_size)
        self.tokens_per_step = (config.crop_size // config.patch_size) ** 2

    def window_loss(self, frames: np.ndarray, context: int) -> float:
        import torch.nn.functional as F

        predicted, target = self.predict(frames, context)
        return float(F.mse_loss(predicted, target))

    def predict(self, frames: np.ndarray, context: int):
        """Predicted and target latents of the post-context tokens of one window."""
        import torch
        import torch.nn.functional as F

        pixels = self._tensor(frames)
        encoder = self.model.encoder
        n_tokens = (len(frames) // self.tubelet) * self.tokens_per_step
        n_context = (context // self.tubelet) * self.tokens_per_step
        context_ids = torch.arange(n_context, device=self.device).unsqueeze(0)
        target_ids = torch.arange(n_context, n_tokens, device=self.device).unsqueeze(0)
        with torch.no_grad():
            hidden = encoder.embeddings(pixels)[:, :n_context]
            for layer in encoder.layer:  # RoPE positions of the context tokens only
                hidden = layer(hidden, context_ids)[0]
            hidden = encoder.layernorm(hidden)
            # The predictor gathers the context positions from a full-length sequence.
            full = hidden.new_zeros(hidden.shape[0], n_tokens, hidden.shape[-1])
            full[:, :n_context] = hidden
            predicted = self.model.predictor(encoder_hidden_states=full,
                                             context_mask=[context_ids],
                                             target_mask=[target_ids]).last_hidden_state
            target = encoder(pixel_values_videos=pixels).last_hidden_state[:, n_context:]
            target = F.layer_norm(target, target.shape[-1:])
        return predicted, target


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
    reversed_frames = np.ascontiguousarray(frames[::-1])
    for context in context_lengths:
        forward = probe.clip_loss(frames, context)
        backward = probe.clip_loss(reversed_frames, context)
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
