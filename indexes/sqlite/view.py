"""``SearchIndex.db``: sqlite-utils over the index's connection, made on first use.

Reads go through ``SearchIndex.conn``; only writes (``set_meta``, ``upsert``) and ``get``
use sqlite-utils, whose import (click, pluggy, dateutil and its plugin hook) cost every
``wiki search`` process ~30 ms it never used (docs/decisions.md, "Start time").
``SearchIndex`` sets ``PRAGMA recursive_triggers`` itself, as ``sqlite_utils.Database``
did when it was made at open.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils


def _database(index) -> sqlite_utils.Database:
    """``sqlite_utils.Database`` over ``index.conn`` (made once, on first access)."""
    import sqlite_utils

    return sqlite_utils.Database(index.conn)


database = functools.cached_property(_database)
"""A class attribute (``db = database``): ``index.db`` is made on first access, then kept."""
