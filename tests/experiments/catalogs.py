"""Plain stimulus catalogs for schedule tests (no files, no database)."""
from experiments.catalog_records import Catalog, CatchRecord, ClipRecord, StimulusRecord
from experiments.categories import CATEGORIES

FRAME_SETS = ((2, "medium"), (4, "medium"), (8, "medium"), (4, "short"), (4, "long"))


def make_catalog(per_category: int = 4, categories=CATEGORIES, with_catch: bool = True,
                 catch_keys=("f", "j")) -> Catalog:
    """Clips of every category in both directions with their frame sets, and one catch video
    per key of ``catch_keys`` (none without ``with_catch``)."""
    clips, next_id = [], iter(range(1, 10**6))
    for category in categories:
        for k in range(per_category):
            stimuli = [StimulusRecord(n, f"s{n}", "clip", d)
                       for d, n in (("forward", next(next_id)), ("backward", next(next_id)))]
            for n_frames, span in FRAME_SETS:
                n = next(next_id)
                stimuli.append(StimulusRecord(n, f"s{n}", "frame_set", None, tuple(range(n_frames)),
                                              {"n_frames": n_frames, "span": span}))
            clips.append(ClipRecord(len(clips) + 1, f"{category.lower()}-{k:02d}", (category,),
                                    tuple(stimuli), annotation_brief=f"brief {k}",
                                    annotation_comprehensive=f"long {k}"))
    catch = tuple(CatchRecord(StimulusRecord(90001 + n, f"catch-{key}", "clip", "forward",
                                             meta={"duration_s": 2.0}), key)
                  for n, key in enumerate(catch_keys))
    return Catalog(tuple(clips), catch if with_catch else ())
