"""The dashboard's study form as a study file: the same fields, checked by the same schema.

The form's values (and an uploaded study file, for the texts and anything the form does not
show) are put together into a study file's text and checked by
:func:`experiments.study_file.check`, so a careless value gets the field and what it expects,
word for word as ``manage.py study validate`` would say it.
"""
import re
import tomllib

from experiments import study_file
from webapp.researcher.studies import shipped_languages

# form field -> (section, key, kind) of the study file; kind: text | number | list
FORM_FIELDS = {
    "title": ("study", "title", "text"),
    "design": ("study", "design", "text"),
    "stimulus_set": ("study", "stimulus_set", "text"),
    "languages": ("study", "languages", "list"),
    "places": ("participants", "places", "number"),
    "sessions": ("sessions", "count", "number"),
    "gap_hours": ("sessions", "gap_hours", "number"),
    "blocks": ("blocks", "count", "number"),
    "trials_per_block": ("blocks", "trials_per_block", "number"),
    "catch_per_block": ("blocks", "catch_per_block", "number"),
    "practice_trials": ("practice", "trials", "number"),
    "pass_accuracy": ("practice", "pass_accuracy", "number"),
    "keys": ("responses", "keys", "list"),
    "fixation_ms": ("timing", "fixation_ms", "number"),
    "response_timeout_ms": ("timing", "response_timeout_ms", "number"),
    "inter_trial_ms": ("timing", "inter_trial_ms", "number"),
}
_BY_PATH = {f"{section}.{key}": name for name, (section, key, _) in FORM_FIELDS.items()}
_BY_PATH["blocks.clips_per_session"] = "trials_per_block"
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
UPLOAD_NAME = "uploaded study file"
MAX_UPLOAD_BYTES = 256 * 1024


def fill(form, config: study_file.StudyConfig, study) -> None:
    """Put a study's configuration into the form (for editing it)."""
    data = tomllib.loads(study_file.to_toml(config))
    form.slug.data = study.slug
    form.based_on.data = str(study.config_version)
    for name, (section, key, kind) in FORM_FIELDS.items():
        value = data.get(section, {}).get(key)
        if name == "trials_per_block":
            clips, blocks = data["blocks"].get("clips_per_session"), data["blocks"]["count"]
            value = clips // blocks if clips and clips % blocks == 0 else None
        if value is not None:
            getattr(form, name).data = ", ".join(value) if kind == "list" else str(value)


def config_from(form, base: study_file.StudyConfig | None) -> study_file.StudyConfig | None:
    """The configuration the form describes, on top of ``base`` (the study being edited) and
    an uploaded study file; None with every problem put on its field."""
    data = tomllib.loads(study_file.to_toml(base)) if base is not None else {}
    upload = _upload(form)
    if upload is None:
        return None
    if base is not None and "min_practice_accuracy" not in upload.get("exclusions", {}) and \
            base.design.exclusions.min_practice_accuracy == base.design.practice.min_accuracy:
        # The study's exclusion rule follows its practice gate: let it follow a changed gate.
        data.get("exclusions", {}).pop("min_practice_accuracy", None)
    for section, values in upload.items():
        if section == "texts":
            data["texts"] = values  # the upload's texts replace the study's own
        else:
            data.setdefault(section, {}).update(values)
    for name, (section, key, kind) in FORM_FIELDS.items():
        raw = (getattr(form, name).data or "").strip()
        table = data.setdefault(section, {})
        if raw:
            table[key] = _value(raw, kind)
        elif not (section == "study" and key in upload.get("study", {})):
            table.pop(key, None)  # blank: the design's default
    study = data.setdefault("study", {})
    if "languages" not in study and study.get("design"):
        # No languages given: those the design's shipped study file offers, as for a demo.
        study["languages"] = list(shipped_languages(study["design"]))
    blocks = data.get("blocks", {})
    if "trials_per_block" in blocks:
        blocks.pop("clips_per_session", None)
    config, problems, _ = study_file.check(to_source(data), "form")
    for problem in problems:
        _put(form, problem.path, problem.message)
    if config is None:
        return None
    usable = form.usable.get(config.design.name, [])
    if config.stimulus_set not in usable:
        form.stimulus_set.errors = [
            f"stimulus_set: expected a stimulus set that {config.design.name} can use "
            f"({', '.join(usable) or 'none is stored'}), got {config.stimulus_set!r}"]
        return None
    return config


def _upload(form) -> dict | None:
    """The uploaded study file's tables ({} without one); None after putting its problems on
    the upload field.  Texts must be inline: a ``{file = ...}`` text would read a file on the
    server."""
    storage = form.study_file.data
    if not storage or not getattr(storage, "filename", ""):
        return {}
    raw = storage.read(MAX_UPLOAD_BYTES + 1)
    errors = form.study_file.errors = list(form.study_file.errors or [])
    if len(raw) > MAX_UPLOAD_BYTES:
        errors.append(f"expected a study file of at most {MAX_UPLOAD_BYTES // 1024} KiB")
        return None
    try:
        source = raw.decode("utf-8")
    except UnicodeDecodeError:
        errors.append("expected a UTF-8 text file (TOML)")
        return None
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        errors.append(f"{UPLOAD_NAME}: not valid TOML: {error}")
        return None
    for language, keys in (data.get("texts") or {}).items():
        for key, value in (keys.items() if isinstance(keys, dict) else ()):
            if isinstance(value, dict):
                errors.append(f"{UPLOAD_NAME}: texts.{language}.{key}: expected the Markdown "
                              "inline (a {file = ...} text cannot be uploaded), got a table")
    _, problems, _ = study_file.check(source, UPLOAD_NAME) if not errors else (None, [], [])
    # Problems of settings the form overrides are the form's to report.
    errors.extend(str(p) for p in problems if p.path not in _BY_PATH
                  and not p.message.startswith("required"))
    return None if errors else data


def _value(raw: str, kind: str):
    if kind == "list":
        return [item.strip() for item in raw.split(",") if item.strip()]
    if kind == "number":
        if _INT.match(raw):
            return int(raw)
        if _FLOAT.match(raw):
            return float(raw)
    return raw  # the schema says what it expected


def _put(form, path: str, message: str) -> None:
    name = _BY_PATH.get(path)
    field = getattr(form, name) if name else form.study_file
    field.errors = [*(field.errors or []), f"{path}: {message}"]


def to_source(data: dict) -> str:
    """A study file's text from its tables."""
    lines = []
    for section, values in data.items():
        if section == "texts":
            continue
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {study_file._toml(value)}" for key, value in values.items())
    for language, keys in (data.get("texts") or {}).items():
        lines.append(f"[texts.{language}]")
        lines.extend(f"{key} = {study_file._toml_text(str(text))}" for key, text in keys.items())
    return "\n".join(lines) + "\n"

