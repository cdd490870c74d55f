"""What makes a participant the test client plays one a person could be, by the plausibility
rules (experiments/plausibility.py), without the test waiting a person's time: the server's
clock moves on at every reading (:class:`PersonClock`, the ``person_pace`` fixture), and the
session's media is fetched before its trials are answered (:func:`preload`), as the runner
preloads a block before it starts."""
from datetime import datetime, timedelta, timezone


class PersonClock:
    """A server clock that moves on ``step`` at every reading: two trials posted back to
    back arrive as far apart as a person's would."""

    def __init__(self, step: timedelta = timedelta(seconds=3)):
        self.time = datetime.now(timezone.utc)
        self.step = step

    def __call__(self) -> datetime:
        self.time += self.step
        return self.time


def preload(client, api: str) -> int:
    """Fetch every stimulus of the session at ``api`` (``/api/session/<token>``), as the
    runner does before a block; returns how many were asked for."""
    trials = client.get(api).get_json()["trials"]
    urls = [url for t in trials for url in (t["stimulus"]["url"], *t["stimulus"]["frames"])
            if url]
    for url in urls:
        client.get(url).close()
    return len(urls)
