"""An item's outcome (its calls' cache values) as one canonical trial row: the answer parsed
from the text without reasoning, the logit scores, the reasoning's status and the ledger."""
from __future__ import annotations

import math

from analysis import columns as C
from analysis.vlm.ledger import item_ledger
from analysis.vlm.parsers import PARSE_CUT_OFF, Parsed
from analysis.vlm.reasoning import CUT_OFF

# Backend info about the video inputs that a trial row keeps (transformers backend).
VIDEO_INPUT_INFO = ("temporal_position_ids_per_video", "frames_per_video", "video_encoding")


def _parse_generation(item, generation: dict) -> tuple[Parsed, dict]:
    """The parsed answer (from the text without reasoning) and the reasoning's fields."""
    reasoning = generation.get("reasoning")
    if not reasoning:  # a model that does not think (or a result cached before this split)
        return item.parse(generation["text"]), {}
    fields = {C.EXTRA_REASONING: reasoning["status"]}
    if reasoning["text"] and reasoning["text"] not in generation["text"]:
        fields["reasoning_text"] = reasoning["text"]  # sent apart from the answer
    if reasoning["status"] == CUT_OFF:
        return Parsed(None, PARSE_CUT_OFF, "the reasoning never ended (thinking budget or "
                                           "token limit)"), fields
    return item.parse(reasoning["answer"]), fields


def _add_scores(extra: dict, scores: dict) -> str | None:
    """Put a score's fields in ``extra``; return the more probable label (None if missing)."""
    extra["surface_forms"] = scores["forms"]
    normalised = scores["normalised"]
    if normalised is None:  # no p_forward: no label among the top logprobs returned
        extra.update({"score_missing": scores["score_missing"], "label_mass": 0.0})
        return None
    # A label outside a server's top k has log-probability -inf here: stored as None (JSON
    # has no infinity, and PostgreSQL refuses it) and named, since its p_label of 0 is only
    # an upper-bound guess.
    logprobs = {label: value if math.isfinite(value) else None
                for label, value in scores["logprobs"].items()}
    extra.update({"label_logprobs": logprobs, "p_label": normalised,
                  "label_mass": scores["label_mass"]})
    below = sorted(label for label, value in logprobs.items() if value is None)
    if below:
        extra["labels_below_top_logprobs"] = below
    if "F" in normalised:
        extra[C.EXTRA_P_FORWARD] = normalised["F"]
    return max(normalised, key=normalised.get)


def trial_row(item, index: int, outcome: dict) -> dict:
    """One canonical trial row (subject and session ids are filled in by the writer)."""
    extra = dict(item.extra)
    response = None
    generation, scores = outcome.get("generate"), outcome.get("score")
    if generation is not None:
        parsed, reasoning = _parse_generation(item, generation)
        response = parsed.response
        extra.update({C.EXTRA_RAW_TEXT: generation["text"], C.EXTRA_PARSE_STATUS: parsed.status,
                      "parse_detail": parsed.detail, "n_new_tokens": generation["n_new_tokens"],
                      "n_prompt_tokens": generation["n_prompt_tokens"], **reasoning})
    extra.update(item_ledger(outcome))
    if scores is not None:
        more_probable = _add_scores(extra, scores)
        if generation is None:  # logits only: the answer is the more probable label
            response = more_probable
            extra["response_source"] = "logits"
    info = generation or scores or {}
    extra["temporal_position_ids"] = info.get("temporal_position_ids")
    for key in VIDEO_INPUT_INFO:  # how the clips reached the model, where the backend says
        if key in info:
            extra[key] = info[key]
    videos = [v for v in item.request.visuals if v.kind == "video"]
    if videos:  # the test clip is the last video (demonstrations come first)
        extra["metadata_fps"] = round(videos[-1].metadata_fps, 6)
        extra["frame_indices"] = videos[-1].frame_indices
    stimulus = item.stimulus
    if stimulus.item_id:  # a published benchmark item: the row traces back to it
        extra["item_id"] = stimulus.item_id
    return {"trial_index": index, "trial_type": item.trial_type, "block": None,
            "stimulus_id": stimulus.id, "source_clip_id": stimulus.source_clip_id,
            "categories": list(stimulus.categories),
            # As for people: a frame order has no direction, whatever its frames came from.
            "direction": None if item.trial_type == C.FRAME_ORDER else stimulus.direction,
            "correct_response": item.correct_response, "response": response,
            # As for people's timeouts: no answer is not a correct one (the non-response
            # policy, analysis.nonresponse, finds it by its empty response).
            "correct": response is not None and response == item.correct_response,
            "rt_ms": None, "onset_method": None, "dropped_frames": None, "excluded": False,
            "exclusion_reasons": [], "extra": extra}
