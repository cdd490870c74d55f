"""F4 at full length: headless Chromium offline for 30 s mid-block, then reconnected.

Runs tests/reliability/test_offline_browser.py with CHRONOSCOPE_OFFLINE_S=30 (CI runs the
same test with a 5-second offline period) and prints its one-line result.

    python bench/offline_browser.py [--offline-s 30]
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offline-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    env = {**os.environ, "CHRONOSCOPE_OFFLINE_S": str(args.offline_s)}
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                            "tests/reliability/test_offline_browser.py"], cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
