"""The switch a mutant schema's bodies call (probes.schema): ``which(key)`` is the number of the probe
switched on, 0 for none, in which case the function ``key`` is remembered as entered early (what the
schema plugin, swedeck_schema, tells by). Reached through ``__import__``, so the call resolves in any
interpreter that finds this folder; a process a run starts takes the run's number from
``SWEDECK_MUTANT``. Standard library only."""

import os

ACTIVE = [int(os.environ.get("SWEDECK_MUTANT") or 0)]
EARLY = set()


def which(key):
    if not ACTIVE[0]:
        EARLY.add(key)
    return ACTIVE[0]
