"""Published benchmarks shipped with Chronoscope: their metadata, protocol and results.

Only AoT-PsyPhyBENCH so far; ``BENCHMARKS`` maps the name used on the command line to the
module that reads it.
"""
BENCHMARKS = {"aot-psyphybench": "experiments.benchmarks.aot_psyphybench"}


def check_benchmark(name: str) -> str:
    """The canonical name of benchmark ``name``, given in any case (papers write
    "AoT-PsyPhyBENCH"), else raise ``ValueError`` listing them."""
    if name.lower() not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose from {sorted(BENCHMARKS)}")
    return name.lower()
