"""Window attention of the Qwen-VL vision towers in one SDPA call per window length.

Qwen2-VL, Qwen2.5-VL and Qwen3-VL vision towers attend within windows (a frame, or a
window of patches within a frame) listed by ``cu_seqlens``.  Without flash attention,
transformers splits the sequence at those bounds and calls SDPA once per window and layer,
so a batch of 8 clips makes 8 times the Python-level calls of one clip and batching gains
little.  Windows of equal length are independent problems of one shape: stacked on the
batch axis, one SDPA call computes each of them with the same math as its own call.

:func:`group_windows` installs that forward on a loaded model's vision attention modules
(the SDPA implementation only; eager and flash attention are left as they are) and can
take it off again, which the benchmark uses to compare with transformers' own path.
"""
from __future__ import annotations

import sys
import types
from typing import Any

# The vision attention classes whose non-flash forward loops over cu_seqlens windows, and
# whose modeling module defines ``apply_rotary_pos_emb_vision`` (checked in the tests).
CLASSES = tuple(f"transformers.models.{name}" for name in (
    "qwen2_vl.modeling_qwen2_vl.VisionAttention",
    "qwen2_5_vl.modeling_qwen2_5_vl.Qwen2_5_VLVisionAttention",
    "qwen3_vl.modeling_qwen3_vl.Qwen3VLVisionAttention"))


def group_windows(model: Any, enabled: bool = True) -> int:
    """Install (or, with ``enabled=False``, remove) the grouped window attention on every
    SDPA vision attention module of ``model``; returns how many modules it changed."""
    changed = 0
    for module in model.modules():
        if f"{type(module).__module__}.{type(module).__qualname__}" not in CLASSES:
            continue
        if getattr(module.config, "_attn_implementation", None) != "sdpa":
            continue
        if enabled:
            module.forward = types.MethodType(_grouped_forward, module)
        else:
            module.__dict__.pop("forward", None)  # back to the class's own forward
        changed += 1
    return changed


def windowed_sdpa(query, key, value, cu_seqlens, scale: float):
    """Attention within each ``cu_seqlens`` window of (heads, tokens, dim) tensors, one
    SDPA call per distinct window length; returns (tokens, heads, dim)."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    bounds = cu_seqlens.tolist()
    heads, tokens, dim = query.shape
    lengths = {end - start for start, end in zip(bounds[:-1], bounds[1:]) if end > start}
    if len(lengths) == 1:  # the usual case: windows are views of the sequence, no copy
        (length,) = lengths
        q, k, v = (t[:, bounds[0]:bounds[-1]].unflatten(1, (-1, length)).transpose(0, 1)
                   for t in (query, key, value))
        result = scaled_dot_product_attention(q, k, v, scale=scale)
        return result.permute(0, 2, 1, 3).reshape(tokens, heads, dim)
    by_length: dict[int, list[int]] = {}
    for start, end in zip(bounds[:-1], bounds[1:]):
        if end > start:
            by_length.setdefault(end - start, []).append(start)
    out = query.new_empty(tokens, heads, dim)
    for length, starts in by_length.items():
        index = (torch.tensor(starts, device=query.device)[:, None]
                 + torch.arange(length, device=query.device)).reshape(-1)
        # (heads, windows x length, dim) -> (windows, heads, length, dim)
        q, k, v = (t.index_select(1, index).unflatten(1, (len(starts), length)).transpose(0, 1)
                   for t in (query, key, value))
        result = scaled_dot_product_attention(q, k, v, scale=scale)
        out[index] = result.permute(0, 2, 1, 3).reshape(-1, heads, dim)
    return out


def _grouped_forward(self, hidden_states, cu_seqlens, position_embeddings=None,
                     max_seqlen=None, **kwargs):
    """transformers' vision attention forward with its per-window loop done by length."""
    if self.training:  # dropout and gradients stay with transformers' own path
        return type(self).forward(self, hidden_states, cu_seqlens, position_embeddings,
                                  max_seqlen, **kwargs)
    apply_rotary = sys.modules[type(self).__module__].apply_rotary_pos_emb_vision
    seq_length = hidden_states.shape[0]
    query, key, value = (self.qkv(hidden_states).reshape(seq_length, 3, self.num_heads, -1)
                         .permute(1, 0, 2, 3).unbind(0))
    cos, sin = position_embeddings
    query, key = apply_rotary(query, key, cos, sin)
    out = windowed_sdpa(query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1),
                        cu_seqlens, self.scaling)
    return self.proj(out.reshape(seq_length, -1))
