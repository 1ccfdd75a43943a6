"""A store's settings as one process sees them: the stored JSON, re-read when another process changed it.

PRAGMA data_version tells, without a query, whether any other connection committed since the
last look; only then is the stored JSON read again (and parsed only if it changed). So a setting
flipped by the CLI or the HTTP page reaches a running server at its next call. Changes made with
``persist=False`` stay in this process, on top of whatever is stored (evaluation sweeps).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from kenning.errors import InvalidInput
from kenning.store.db import Database
from kenning.store.models import StoreConfig

from .requests import invalid


class Settings:
    """The settings in force for one Store object."""

    def __init__(self, db: Database):
        self.db = db
        self._local: dict[str, Any] = {}
        self._seen = db.data_version()
        self._raw = db.get_meta("config") or "{}"
        self._config = config_from(json.loads(self._raw), self._local)

    def current(self) -> StoreConfig:
        version = self.db.data_version()
        if version != self._seen:
            self._seen = version
            raw = self.db.get_meta("config") or "{}"
            if raw != self._raw:
                self._raw = raw
                self._config = config_from(json.loads(raw), self._local)
        return self._config

    def change(self, persist: bool, changes: dict[str, Any]) -> StoreConfig:
        """Merge ``changes`` (stored in one transaction, or kept local); unknown names and bad values
        raise InvalidInput and change nothing."""
        unknown = sorted(set(changes) - set(StoreConfig.model_fields))
        if unknown:
            raise InvalidInput(f"unknown setting {unknown[0]!r}; settings are: {', '.join(StoreConfig.model_fields)}")
        if not persist:
            config_from({**self.current().model_dump(), **changes}, {})  # validate before keeping any
            self._local.update(changes)
            self._config = config_from(json.loads(self._raw), self._local)
            return self._config
        with self.db.transaction() as c:
            row = c.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            stored = config_from(json.loads(row[0]) if row else {}, changes)
            raw = stored.model_dump_json()
            Database.set_meta(c, "config", raw)
        for name in changes:
            self._local.pop(name, None)
        self._raw = raw
        self._config = config_from(json.loads(raw), self._local)
        return self._config


def config_from(stored: dict[str, Any], changes: dict[str, Any]) -> StoreConfig:
    """Settings from stored JSON with changes on top; a bad value is a one-line InvalidInput."""
    try:
        return StoreConfig.model_validate({**StoreConfig.model_validate(stored).model_dump(), **changes})
    except ValidationError as exc:
        raise invalid(exc) from exc
