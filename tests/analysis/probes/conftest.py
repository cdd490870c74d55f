"""Tiny random VideoMAE and V-JEPA 2 models built from configs, saved and reloaded offline."""
import os

import pytest


@pytest.fixture(scope="session")
def videomae_folder(tmp_path_factory):
    """A saved checkpoint folder of a tiny random VideoMAE (what ``probe tra`` loads)."""
    import torch
    from transformers import VideoMAEConfig, VideoMAEForPreTraining

    os.environ["HF_HUB_OFFLINE"] = "1"
    config = VideoMAEConfig(image_size=32, patch_size=8, num_frames=16, tubelet_size=2,
                            hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                            intermediate_size=64, decoder_hidden_size=32,
                            decoder_num_hidden_layers=1, decoder_num_attention_heads=4,
                            decoder_intermediate_size=64, norm_pix_loss=True)
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("videomae")
    VideoMAEForPreTraining(config).save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_videomae(videomae_folder):
    from transformers import VideoMAEForPreTraining

    return VideoMAEForPreTraining.from_pretrained(videomae_folder)


def build_vjepa2(folder, crop_size: int = 32):
    """A tiny random V-JEPA 2 (seed 0) on ``crop_size`` crops, saved to ``folder`` and
    reloaded offline."""
    import torch
    from transformers import VJEPA2Config, VJEPA2Model

    os.environ["HF_HUB_OFFLINE"] = "1"
    config = VJEPA2Config(patch_size=8, crop_size=crop_size, frames_per_clip=16, tubelet_size=2,
                          hidden_size=48, num_attention_heads=4, num_hidden_layers=2,
                          mlp_ratio=2.0, pred_hidden_size=48, pred_num_attention_heads=4,
                          pred_num_hidden_layers=2, pred_num_mask_tokens=4)
    torch.manual_seed(0)
    VJEPA2Model(config).save_pretrained(folder)
    return VJEPA2Model.from_pretrained(folder)


@pytest.fixture(scope="session")
def tiny_vjepa2(tmp_path_factory):
    return build_vjepa2(tmp_path_factory.mktemp("vjepa2"))
