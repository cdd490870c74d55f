"""The six motion categories of the arrow-of-time study (Hanyu et al., 2023; AoT-PsyPhyBENCH).

Categories are multi-label: a clip of an explosion whose debris falls is both "Diffusion"
and "Fall".  The first five are irreversible processes; "Reciprocal" (cyclic motion) is the
one humans find hard to judge when reversed.
"""
from collections.abc import Iterable

CATEGORIES = ("Proceed", "Fall", "Diffusion", "Division", "Put", "Reciprocal")


def validate_categories(names: Iterable[str]) -> list[str]:
    """Return ``names`` as a list in their given order, without repeats.

    Raises
    ------
    ValueError
        Naming every unknown category (matching is exact: "fall" is not "Fall").
    """
    if isinstance(names, str):
        raise ValueError(f"categories must be a list of names, not the string {names!r}")
    result: list[str] = []
    unknown: list[str] = []
    for name in names:
        if not isinstance(name, str) or name not in CATEGORIES:
            unknown.append(repr(name))
        elif name not in result:
            result.append(name)
    if unknown:
        raise ValueError(f"unknown categor{'y' if len(unknown) == 1 else 'ies'} "
                         f"{', '.join(unknown)}; expected any of {', '.join(CATEGORIES)}")
    return result
