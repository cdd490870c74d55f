"""A methods section for a paper, every number computed from the export's tables.

:func:`methods_markdown` takes the trial table and the participants table (one row per
session, as ``participants.csv``) and writes what a methods section reports: the software
and its versions with citations, who took part and who was excluded for what, the browsers
and operating systems, the displays' refresh rates and the timing quality of the trials.
Nothing in it is typed by hand, so changing the data changes the text.
"""
from __future__ import annotations

import re
from collections import Counter
from importlib import metadata

import pandas as pd
from markdown_it import MarkdownIt

from analysis.columns import HUMAN, SESSION_COMPLETED

# The libraries the numbers come from, each with the reference its authors ask to be cited.
CITED_PACKAGES = {
    "numpy": "Harris, C. R., et al. (2020). Array programming with NumPy. Nature, 585, "
             "357-362. https://doi.org/10.1038/s41586-020-2649-2",
    "scipy": "Virtanen, P., et al. (2020). SciPy 1.0: fundamental algorithms for scientific "
             "computing in Python. Nature Methods, 17, 261-272. "
             "https://doi.org/10.1038/s41592-019-0686-2",
    "pandas": "McKinney, W. (2010). Data structures for statistical computing in Python. "
              "Proceedings of the 9th Python in Science Conference, 56-61. "
              "https://doi.org/10.25080/Majora-92bf1922-00a",
    "statsmodels": "Seabold, S., & Perktold, J. (2010). statsmodels: Econometric and "
                   "statistical modeling with Python. Proceedings of the 9th Python in "
                   "Science Conference, 92-96. https://doi.org/10.25080/Majora-92bf1922-011",
    "flask": "Pallets Projects. Flask. https://flask.palletsprojects.com",
}
CHRONOSCOPE_CITATION = "Chronoscope contributors. Chronoscope (see CITATION.cff in its repository)."
# (family, pattern) in the order they are tried: Edge and Opera say "Chrome" too, Chrome
# says "Safari".
_BROWSERS = (("Edge", r"Edg/"), ("Opera", r"OPR/"), ("Firefox", r"Firefox/"),
             ("Chrome", r"Chrome/|CriOS/"), ("Safari", r"Version/[\d.]+.*Safari/"))
_SYSTEMS = (("Android", r"Android"), ("iOS", r"iPhone|iPad|iPod"), ("ChromeOS", r"CrOS"),
            ("Windows", r"Windows"), ("macOS", r"Mac OS X|Macintosh"), ("Linux", r"Linux|X11"))


def family(user_agent: str, families=_BROWSERS) -> str:
    """The browser (or, with ``_SYSTEMS``, operating system) a user agent names, or "other"."""
    return next((name for name, pattern in families if re.search(pattern, user_agent or "")),
                "other")


def methods_markdown(trials: pd.DataFrame, participants: pd.DataFrame,
                     software: dict | None = None) -> str:
    """The methods section as Markdown (see the module's docstring)."""
    people = participants[(participants["subject_kind"] == HUMAN)
                          & ~participants["simulated"].astype(bool)]
    human_trials = trials[trials["subject_kind"] == HUMAN]
    paragraphs = [_software(software or {}), _sample(people), _devices(people),
                  _timing(human_trials), _exclusions(people, human_trials)]
    models = sorted(set(trials.loc[trials["subject_kind"] != HUMAN, "subject_id"]))
    if models:
        paragraphs.append(f"The same trials were given to {len(models)} model(s): "
                          f"{', '.join(models)}.")
    references = [CHRONOSCOPE_CITATION, *(CITED_PACKAGES[p] for p in _versions())]
    return "\n\n".join(["## Methods", *paragraphs, "### References",
                        "\n".join(f"- {ref}" for ref in references)]) + "\n"


def methods_html(markdown: str) -> str:
    """The section as HTML (raw HTML in the text is escaped, never run)."""
    return MarkdownIt("commonmark", {"html": False}).render(markdown)


def _versions() -> dict[str, str]:
    found = {}
    for package in CITED_PACKAGES:
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def _software(software: dict) -> str:
    version = software.get("version") or "(version unknown)"
    commit = f", commit {software['git_commit'][:12]}" if software.get("git_commit") else ""
    libraries = ", ".join(f"{name} {v}" for name, v in _versions().items())
    return (f"The study ran on Chronoscope {version}{commit} (Chronoscope contributors), a "
            "web application that presents video clips in the participant's browser and "
            f"stores one row per trial. Analyses used Python with {libraries}.")


def _sample(people: pd.DataFrame) -> str:
    entered = people["subject_id"].nunique()
    completed = people.loc[people["status"] == SESSION_COMPLETED, "subject_id"].nunique()
    statuses = ", ".join(f"{status} {n}" for status, n in
                         sorted(Counter(people["status"]).items())) or "none"
    return (f"{entered} participant(s) opened the study and {completed} completed at least "
            f"one session; their {len(people)} session(s) ended as: {statuses}.")


def _devices(people: pd.DataFrame) -> str:
    devices: list[dict] = [info["device"] for info in people["device_info"]
                           if isinstance(info, dict) and isinstance(info.get("device"), dict)]
    if not devices:
        return "No session reported its device."
    agents = [d.get("user_agent", "") for d in devices]
    browsers = _mix(Counter(family(a) for a in agents))
    systems = _mix(Counter(family(a, _SYSTEMS) for a in agents))
    rates = pd.Series([float(d["refresh_hz"]) for d in devices
                       if isinstance(d.get("refresh_hz"), (int, float))], dtype=float)
    refresh = (f"Measured display refresh rates had a median of {rates.median():.1f} Hz "
               f"(range {rates.min():.1f}-{rates.max():.1f} Hz, {len(rates)} session(s))"
               if len(rates) else "No refresh rate was measured")
    return (f"Of {len(devices)} session(s) that reported their device, the browsers were "
            f"{browsers} and the operating systems {systems}. {refresh}.")


def _mix(counts: Counter) -> str:
    total = sum(counts.values())
    return ", ".join(f"{name} {n} ({100 * n / total:.0f}%)" for name, n in counts.most_common())


def _timing(trials: pd.DataFrame) -> str:
    if trials.empty:
        return "No participant trial was stored."
    methods = _mix(Counter(m for m in trials["onset_method"] if isinstance(m, str) and m))
    dropped = pd.to_numeric(trials["dropped_frames"], errors="coerce").dropna()
    frames = (f"{(dropped > 0).mean() * 100:.1f}% of the {len(dropped)} trial(s) with a frame "
              f"count dropped at least one frame (mean {dropped.mean():.2f} frames)"
              if len(dropped) else "no trial counted its frames")
    return (f"{len(trials)} participant trial(s) were stored. Clip onsets were timestamped by "
            f"{methods or 'no method'}; {frames}.")


def _exclusions(people: pd.DataFrame, trials: pd.DataFrame) -> str:
    excluded = people[people["excluded"].astype(bool)]
    by_person = Counter(reason for reasons in excluded["exclusion_reasons"]
                        for reason in set(reasons or []))
    by_trial = Counter(reason for reasons in trials["exclusion_reasons"]
                       for reason in set(reasons or []))
    persons = ", ".join(f"{reason} {n}" for reason, n in sorted(by_person.items())) or "none"
    trial_text = ", ".join(f"{reason} {n}" for reason, n in sorted(by_trial.items())) or "none"
    return (f"{excluded['subject_id'].nunique()} participant(s) were excluded (sessions by "
            f"reason: {persons}); {int(trials['excluded'].astype(bool).sum())} of "
            f"{len(trials)} trial(s) were excluded (by reason: {trial_text}).")
