"""Random-weight vision-language models built from configs, for tests and benchmarks.

``build_vlm("qwen2_5_vl", folder)`` writes a complete model folder (config, random weights,
a byte-level BPE tokenizer trained offline with ``tokenizers`` on the prompt texts, the
processor and the model's chat template) that loads with ``AutoProcessor`` /
``AutoModelForImageTextToText`` and ``HF_HUB_OFFLINE=1``.  ``size="7b"`` gives the real
Qwen2.5-VL-7B shapes for GPU throughput measurements (weights stay random).

``"llava_onevision"`` is the one architecture outside the Qwen family: a SigLIP vision
tower, a 2x2-pooled video path and a Qwen2 text model, as in llava-hf's conversions of
lmms-lab/llava-onevision-qwen2-*-ov, shrunk to 16x16-pixel frames.
"""
from __future__ import annotations

from pathlib import Path

ARCHITECTURES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "llava_onevision")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                  "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
# LLaVA-OneVision keeps Qwen2's chat tokens and adds one placeholder per image and video.
LLAVA_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>"]

# Qwen2-VL / Qwen2.5-VL chat template (as released with the models).
QWEN2_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture "
    "{{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video "
    "{{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# Qwen3-VL: no default system turn.
QWEN3_TEMPLATE = QWEN2_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful "
    "assistant.<|im_end|>\n{% endif %}", "")
# LLaVA-OneVision (chat_template.json of llava-hf/llava-onevision-qwen2-*-ov-hf, as in
# transformers' processor tests): a message's images, then its videos, then its texts.
LLAVA_ONEVISION_TEMPLATE = (
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + ' '}}"
    "{# Render all images first #}{% for content in message['content'] | "
    "selectattr('type', 'equalto', 'image') %}{{ '<image>' }}{% endfor %}"
    "{# Render all video then #}{% for content in message['content'] | "
    "selectattr('type', 'equalto', 'video') %}{{ '<video>' }}{% endfor %}"
    "{# Render all text next #}{% if message['role'] != 'assistant' %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{{ '\n' + content['text'] }}{% endfor %}{% else %}"
    "{% for content in message['content'] | selectattr('type', 'equalto', 'text') %}"
    "{% generation %}{{ '\n' + content['text'] }}{% endgeneration %}{% endfor %}{% endif %}"
    "{{'<|im_end|>'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}")


def _corpus() -> list[str]:
    from analysis.vlm import prompts, prompts_order
    from experiments.benchmarks.protocol import SIMPLE_COT_TRACES

    texts = [prompts.AOT_USER, *prompts.AOT_SYSTEM.values(),
             *prompts.COT_SIMPLE_INSTRUCTION.values(),
             *prompts.COT_MULTI_STEP_INSTRUCTION.values(), *SIMPLE_COT_TRACES.values(),
             prompts_order.frame_order_text(4, "A person folds a shirt."),
             prompts_order.PAIRWISE_QUESTION, "The correct temporal order is: 3, 1, 4, 2"]
    # Make the one-letter answers and their spaced forms frequent enough to be merged.
    texts += ["Answer: F", "Answer: B", "Answer: A", "F", "B", "A"] * 50
    return texts


def train_tokenizer(folder: Path, vocab_size: int = 700, special_tokens=SPECIAL_TOKENS):
    """A byte-level BPE tokenizer trained on the prompt texts, saved to ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>", unk_token=None)
    fast.save_pretrained(folder)
    return fast


def _ids(tokenizer) -> dict:
    get = tokenizer.convert_tokens_to_ids
    return {"image_token_id": get("<|image_pad|>"), "video_token_id": get("<|video_pad|>"),
            "vision_start_token_id": get("<|vision_start|>"),
            "vision_end_token_id": get("<|vision_end|>")}


def _text(arch: str, tokenizer, size: str) -> dict:
    if size == "7b":  # Qwen2.5-VL-7B-Instruct text shapes
        base = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                "num_attention_heads": 28, "num_key_value_heads": 4}
        section = [16, 24, 24]
    else:
        base = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2}
        section = [4, 2, 2]  # sums to head_dim / 2 = 8
    rope = {"rope_type": "default", "mrope_section": section, "rope_theta": 1e6}
    if arch == "qwen3_vl":
        rope["mrope_interleaved"] = True
        base["head_dim"] = base["hidden_size"] // base["num_attention_heads"]
    return {**base, "vocab_size": len(tokenizer), "rope_parameters": rope,
            "max_position_embeddings": 32768, "bos_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}


def _vision(arch: str, text: dict, size: str) -> dict:
    if size == "7b":
        if arch != "qwen2_5_vl":
            raise ValueError("size='7b' is defined for qwen2_5_vl")
        return {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16,
                "out_hidden_size": 3584, "patch_size": 14, "window_size": 112,
                "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2}
    common = {"depth": 2, "num_heads": 4, "patch_size": 4, "spatial_merge_size": 2,
              "temporal_patch_size": 2}
    if arch == "qwen2_vl":
        return {**common, "embed_dim": 32, "hidden_size": text["hidden_size"], "mlp_ratio": 2}
    if arch == "qwen2_5_vl":
        return {**common, "hidden_size": 32, "intermediate_size": 64,
                "out_hidden_size": text["hidden_size"], "window_size": 16,
                "fullatt_block_indexes": [1], "tokens_per_second": 2}
    return {**common, "hidden_size": 32, "intermediate_size": 64,
            "out_hidden_size": text["hidden_size"], "num_position_embeddings": 64,
            "deepstack_visual_indexes": [0]}


def _classes(arch: str):
    import transformers as T

    return {
        "qwen2_vl": (T.Qwen2VLConfig, T.Qwen2VLForConditionalGeneration, T.Qwen2VLProcessor,
                     T.Qwen2VLImageProcessor, T.Qwen2VLVideoProcessor, QWEN2_TEMPLATE),
        "qwen2_5_vl": (T.Qwen2_5_VLConfig, T.Qwen2_5_VLForConditionalGeneration,
                       T.Qwen2_5_VLProcessor, T.Qwen2VLImageProcessor, T.Qwen2VLVideoProcessor,
                       QWEN2_TEMPLATE),
        "qwen3_vl": (T.Qwen3VLConfig, T.Qwen3VLForConditionalGeneration, T.Qwen3VLProcessor,
                     T.Qwen2VLImageProcessor, T.Qwen3VLVideoProcessor, QWEN3_TEMPLATE),
    }[arch]


def build_vlm(arch: str, folder, *, size: str = "tiny", seed: int = 0, dtype: str = "float32",
              save: bool = True):
    """Write (or, with ``save=False``, return) a random ``arch`` model and its processor.

    Returns ``(model, processor)``; with ``save`` they are also written to ``folder``.
    """
    import torch

    if arch not in ARCHITECTURES:
        raise ValueError(f"arch must be one of {ARCHITECTURES}, got {arch!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if arch == "llava_onevision":
        if size != "tiny":
            raise ValueError("llava_onevision is built only with size='tiny'")
        model, processor = _llava_onevision(folder, seed)
    else:
        model, processor = _qwen(arch, folder, size, seed)
    model = model.to(getattr(torch, dtype)).eval()
    if save:
        model.save_pretrained(folder)
        processor.save_pretrained(folder)
    return model, processor


def _qwen(arch: str, folder: Path, size: str, seed: int):
    import torch

    config_cls, model_cls, processor_cls, image_cls, video_cls, template = _classes(arch)
    tokenizer = train_tokenizer(folder)
    text = _text(arch, tokenizer, size)
    vision = _vision(arch, text, size)
    config = config_cls(text_config=text, vision_config=vision, **_ids(tokenizer),
                        tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = model_cls(config)
    patch = vision["patch_size"] * 2
    frames_tokens = 64 if size == "tiny" else 256  # cap on merged tokens per frame pair
    pixels = {"shortest_edge": patch * patch, "longest_edge": patch * patch * frames_tokens}
    processor = processor_cls(
        image_processor=image_cls(size=pixels, patch_size=vision["patch_size"], merge_size=2,
                                  temporal_patch_size=2),
        video_processor=video_cls(size=pixels, patch_size=vision["patch_size"], merge_size=2,
                                  temporal_patch_size=2),
        tokenizer=tokenizer, chat_template=template)
    return model, processor


# LLaVA-OneVision at 1/24 scale: 16x16 frames in 4x4 patches (the real 384x384 in 14x14 gives
# 27x27), so an image is 16 tokens and a video frame 2x2 = 4 after pooling; the anyres grid
# is the real 384-pixel grid (1x1 to 6x6 tiles) at 16 pixels a tile.
LLAVA_TILE = 16
LLAVA_PATCH = 4


def _llava_onevision(folder: Path, seed: int):
    import torch
    import transformers as T

    tokenizer = train_tokenizer(folder, special_tokens=LLAVA_SPECIAL_TOKENS)
    # The tiny Qwen text sizes; Qwen2 itself has 1-D rope (no multimodal sections).
    text = {**_text("qwen2_vl", tokenizer, "tiny"), "model_type": "qwen2",
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
    vision = {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 64,
              "num_hidden_layers": 2, "num_attention_heads": 4, "image_size": LLAVA_TILE,
              "patch_size": LLAVA_PATCH, "vision_use_head": False}
    grid = [[LLAVA_TILE * i, LLAVA_TILE * j] for i in range(1, 7) for j in range(1, 7)]
    get = tokenizer.convert_tokens_to_ids
    config = T.LlavaOnevisionConfig(
        text_config=text, vision_config=vision, image_grid_pinpoints=grid,
        image_token_index=get("<image>"), video_token_index=get("<video>"),
        vision_feature_select_strategy="full", vision_feature_layer=-1,
        vision_aspect_ratio="anyres_max_9", tie_word_embeddings=False)
    torch.manual_seed(seed)
    model = T.LlavaOnevisionForConditionalGeneration(config)
    square = {"height": LLAVA_TILE, "width": LLAVA_TILE}
    processor = T.LlavaOnevisionProcessor(
        image_processor=T.LlavaOnevisionImageProcessor(size=square, image_grid_pinpoints=grid),
        video_processor=T.LlavaOnevisionVideoProcessor(size=square), tokenizer=tokenizer,
        num_image_tokens=(LLAVA_TILE // LLAVA_PATCH) ** 2, vision_feature_select_strategy="full",
        vision_aspect_ratio="anyres_max_9", chat_template=LLAVA_ONEVISION_TEMPLATE)
    return model, processor
