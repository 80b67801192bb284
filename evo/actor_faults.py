"""Actors that die mid-campaign: each is replaced, until they keep dying.

A Ray actor's process can be killed (the OOM killer, an operator's kill -9, a lost node) or
stop answering. The campaign starts a fresh one in its place and sends its work again (the
fitness queue and the islands' checkpoints make that exact); `Replacements` counts these,
says each in one progress line and records the counts in campaign.json.
Deaths in a burst are not bad luck but a cause no replacement fixes (a node out of memory,
a GPU gone, a kernel that kills whatever scores it): the `MAX_DEATHS`-th death of one role
within `WINDOW_S` stops the campaign with `ActorsKeepDying`, at its last checkpoint.
"""

from __future__ import annotations

import collections
import json
import time
from pathlib import Path
from typing import Callable

import ray

from evo import results
from evo.fatal import Fatal

DEATHS = (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError)
"""What a call on a dead actor raises (ActorDiedError, ActorUnavailableError are
RayActorErrors), or on one that stopped answering within its deadline."""

MAX_DEATHS = 3
"""Deaths of one role within `WINDOW_S` that stop the campaign instead of a replacement."""

WINDOW_S = 10 * 60.0

ROLES = ("fitness", "population")


class ActorsKeepDying(Fatal):
    """The campaign stopped because actors of one role kept dying; str() is one line."""


def why(error: BaseException) -> str:
    """Returns an error as one short line: its type and the first line of its message."""
    first = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    return f"{type(error).__name__}: {first[:160]}" if first else type(error).__name__


class Replacements:
    """Counts the replacements of a campaign's actors per role in its campaign.json
    ("actor_replacements", added to by a resumed run); stops the campaign when one role
    keeps dying."""

    def __init__(self, folder: Path):
        self._folder = folder
        recorded = json.loads((folder / "campaign.json").read_text()).get("actor_replacements", {})
        self.counts = {role: int(recorded.get(role, 0)) for role in ROLES}
        self._deaths = {role: collections.deque() for role in ROLES}
        self._record()  # 0s until one dies

    def _record(self) -> None:
        results.set_campaign_field(self._folder, "actor_replacements", dict(self.counts))

    def replace(self, role: str, who: str, cause: str, start: Callable[[], tuple]):
        """Books the death of `who` (an actor of `role`) from `cause`, then calls `start`,
        which starts its replacement and re-submits its work, returning (what it returns,
        a phrase saying what was re-submitted); prints one line; returns the first.

        Raises ActorsKeepDying instead when this is the `MAX_DEATHS`-th death of `role`
        within `WINDOW_S`.
        """
        now = time.monotonic()
        deaths = self._deaths[role]
        deaths.append(now)
        while now - deaths[0] > WINDOW_S:
            deaths.popleft()
        if len(deaths) >= MAX_DEATHS:
            raise ActorsKeepDying(
                f"{role} actors keep dying ({len(deaths)} deaths within "
                f"{WINDOW_S / 60:.0f} minutes, the last: {who}, {cause}); a replacement would "
                f"not last: look for the cause in the Ray logs (/tmp/ray/session_latest/logs) "
                f"or the system log (out of memory?)")
        started, resubmitted = start()
        self.counts[role] += 1
        print(f"{who} died ({cause}); replaced, {resubmitted}", flush=True)
        self._record()
        return started
