"""The dashboard's study form as a study file: the same settings, checked by the same schema.

The form's fields, their groups, labels and help are derived from the settings' declaration
(:mod:`experiments.study_settings`): a setting with a ``form`` there is a field here.

An uploaded study file is checked as ``manage.py study validate`` checks a file on disk, every
error with its line.  Its settings are the study's, except where the researcher filled in a
field (changed it from what the form showed); the design and stimulus set, which a select
always sends, must be the file's.  The result is put together into a study file's text and
checked by :func:`experiments.study_file.check`, so a careless value gets the field and what
it expects, word for word as ``validate`` would say it.
"""
import re
import tomllib
from pathlib import PurePosixPath
from typing import NamedTuple

from flask_wtf import FlaskForm
from flask_wtf.file import FileField
from wtforms import HiddenField, SelectField, StringField
from wtforms.validators import DataRequired, Length

from experiments import study_file, study_format, study_scan
from experiments.study_settings import SETTINGS, STUDY, FormField, Setting
from webapp.researcher.studies import shipped_languages

_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?$")
MAX_UPLOAD_BYTES = study_file.MAX_FILE_BYTES
# How the form writes a setting of each kind: numbers and comma-separated lists, else text.
_NUMBER_KINDS, _LIST_KINDS = ("int", "number"), ("language_list", "key_pair", "choice_list")


class Shown(NamedTuple):
    """A setting the form shows: where it is in a study file, and its declaration."""

    section: str
    key: str
    setting: Setting
    form: FormField


def form_fields() -> dict[str, Shown]:
    """form field -> each setting the form shows, as :mod:`experiments.study_settings`
    declares them when asked."""
    return {setting.form.name or key: Shown(section, key, setting, setting.form)
            for section, settings in SETTINGS.items() for key, setting in settings.items()
            if setting.form is not None}


def _kind(setting: Setting) -> str:
    return "number" if setting.kind in _NUMBER_KINDS else \
        "list" if setting.kind in _LIST_KINDS else "text"


def _hint(setting: Setting) -> str:
    """The help under a field: the setting's help, and a number's bounds."""
    if _kind(setting) != "number":
        return setting.help
    expected = setting.expected + setting.bound
    return f"{setting.help} {expected[0].upper()}{expected[1:]}."


def new_form() -> FlaskForm:
    """The dashboard's study form: the slug, a text field (or a select) per setting the
    declaration puts on the form, and a study file's upload.  Every field is text, checked by
    the study file's own schema (:func:`config_from`), so a careless value is answered with the
    field and what it expects, as ``manage.py study validate`` answers it."""
    fields: dict = {"slug": StringField("Slug (in the participant link)",
                                        validators=[DataRequired(), Length(max=64)]),
                    "based_on": HiddenField(), "groups": field_groups}
    for name, (_, _, setting, form) in form_fields().items():
        fields[name] = SelectField(form.label, validate_choice=False, description=_hint(setting)) \
            if form.select else StringField(form.label, description=_hint(setting))
    fields["study_file"] = FileField("Texts and other settings: a study file (TOML, texts "
                                     "inline; it sets what the fields above leave blank)")
    return type("StudyForm", (FlaskForm,), fields)()


def field_groups(form) -> list[tuple[str, list]]:
    """The form's fieldsets, (legend, fields), in the declared order: the slug opens the first,
    the study file's upload is the last."""
    groups: dict[str, list] = {STUDY: [form.slug]}
    for name, shown in form_fields().items():
        groups.setdefault(shown.form.group, []).append(form[name])
    return [*groups.items(), ("Texts", [form.study_file])]


def fill(form, config: study_file.StudyConfig, study) -> None:
    """Put a study's configuration into the form (for editing it)."""
    form.slug.data = study.slug
    form.based_on.data = str(study.config_version)
    for name, text in _shown(config).items():
        getattr(form, name).data = text


def _shown(config: study_file.StudyConfig) -> dict[str, str]:
    """The form's text of each field ``config`` sets."""
    data = tomllib.loads(study_file.to_toml(config))
    shown = {}
    for name, (section, key, setting, _) in form_fields().items():
        value = data.get(section, {}).get(key)
        if name == "trials_per_block":
            clips, blocks = data["blocks"].get("clips_per_session"), data["blocks"]["count"]
            value = clips // blocks if clips and clips % blocks == 0 else None
        if value is not None:
            shown[name] = ", ".join(value) if _kind(setting) == "list" else str(value)
    return shown


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
    in_file = {name for path, name in _by_path().items()
               if path.split(".")[1] in upload.get(path.split(".")[0], {})}
    shown = _shown(base) if base is not None else {}
    # Selects: never blank, so they cannot leave a setting to an uploaded file.
    chosen = [name for name, shown in form_fields().items() if shown.form.select]
    for name, (section, key, setting, _) in form_fields().items():
        raw = (getattr(form, name).data or "").strip()
        table = data.setdefault(section, {})
        if name in chosen and name in in_file and raw and raw != table[key]:
            getattr(form, name).errors = [f"{section}.{key}: the form chose {raw!r}, the "
                                          f"uploaded study file {table[key]!r}: choose the same"]
        elif name in in_file and raw in ("", shown.get(name)):
            continue  # left blank or as shown: the file's value
        elif raw:
            table[key] = _value(raw, _kind(setting))
        else:
            table.pop(key, None)  # blank: the design's default
    if any(getattr(form, name).errors for name in chosen):
        return None
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
    """The uploaded study file's tables ({} without one); None after putting every problem
    ``manage.py study validate`` would print on the upload field.  It is checked without a
    folder, so a ``{file = ...}`` text is an error, never a file read on the server."""
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
    name = PurePosixPath(storage.filename.replace("\\", "/")).name
    _, problems, _ = study_file.check(source, name)
    # The form gives what a file leaves out (a file of texts alone names no design).
    errors.extend(str(p) for p in problems if not p.message.startswith("required"))
    return None if errors else tomllib.loads(source)


def _value(raw: str, kind: str):
    if kind == "list":
        return [item.strip() for item in raw.split(",") if item.strip()]
    # A number is a file's word: longer, the schema refuses it as text (int() raised a
    # ValueError, a 500, past 4,300 digits).
    if kind == "number" and len(raw) <= study_scan.MAX_KEY_CHARS:
        if _INT.match(raw):
            return int(raw)
        if _FLOAT.match(raw):
            return float(raw)
    return raw  # the schema says what it expected


def _by_path() -> dict[str, str]:
    """setting ("practice.trials") -> its form field; clips_per_session is trials_per_block's."""
    return {f"{section}.{key}": name for name, (section, key, *_) in form_fields().items()} | \
        {"blocks.clips_per_session": "trials_per_block"}


def _put(form, path: str, message: str) -> None:
    name = _by_path().get(path)
    field = getattr(form, name) if name else form.study_file
    field.errors = [*(field.errors or []), f"{path}: {message}"]


def to_source(data: dict) -> str:
    """A study file's text from its tables."""
    lines = []
    for section, values in data.items():
        if section == "texts":
            continue
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {study_format.toml_value(value)}" for key, value in values.items())
    for language, keys in (data.get("texts") or {}).items():
        lines.append(f"[texts.{language}]")
        lines.extend(f"{key} = {study_format.toml_text(str(text))}" for key, text in keys.items())
    return "\n".join(lines) + "\n"

