"""A store's settings as one process sees them: the stored JSON, re-read when another process changed it.

PRAGMA data_version tells, without a query, whether any other connection committed since the
last look; only then is the stored JSON read again (and parsed only if it changed). So a setting
flipped by the CLI or the HTTP page reaches a running server at its next call. Changes made with
``persist=False`` stay in this process, on top of whatever is stored (evaluation sweeps).

The JSON is validated (StoreConfig, pydantic) on first use; ``plain`` gives a plain search its
values without pydantic when the stored JSON is what ``change`` writes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kenning.errors import InvalidInput
from kenning.store.db import Database
from kenning.store.plain import CONFIG_DEFAULTS, MODES, Fields

if TYPE_CHECKING:
    from kenning.store.models import StoreConfig


class Settings:
    """The settings in force for one Store object."""

    def __init__(self, db: Database):
        self.db = db
        self._local: dict[str, Any] = {}
        self._seen = db.data_version()
        self._raw = db.get_meta("config") or "{}"
        self._config: StoreConfig | None = None  # validated on first use

    def _reread(self) -> None:
        version = self.db.data_version()
        if version != self._seen:
            self._seen = version
            raw = self.db.get_meta("config") or "{}"
            if raw != self._raw:
                self._raw = raw
                self._config = None

    def current(self) -> StoreConfig:
        self._reread()
        if self._config is None:
            self._config = config_from(json.loads(self._raw), self._local)
        return self._config

    def plain(self) -> Fields | None:
        """The settings as plain values, or None when only StoreConfig reads them the same way: a
        stored name or value other than the defaults or what ``change`` stores, or a local change."""
        self._reread()
        stored = json.loads(self._raw)
        if self._local or not isinstance(stored, dict) or not all(_plain_setting(k, v) for k, v in stored.items()):
            return None
        values = {**CONFIG_DEFAULTS, **stored}
        return Fields(**{**values, "weights": dict(values["weights"])})  # never the defaults' own dict

    def change(self, persist: bool, changes: dict[str, Any]) -> StoreConfig:
        """Merge ``changes`` (stored in one transaction, or kept local); unknown names and bad values
        raise InvalidInput and change nothing."""
        from kenning.store.models import StoreConfig

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


def _plain_setting(name: str, value: Any) -> bool:
    """A stored setting a plain search may use as it is: the default, a known mode, or a number or
    flag of the default's own type within what StoreConfig allows for it."""
    if name not in CONFIG_DEFAULTS:
        return False
    default = CONFIG_DEFAULTS[name]
    if value == default and type(value) is type(default):
        return True
    if name == "default_mode":
        return value in MODES
    if name in ("bm25_k1", "bm25_b", "rrf_k"):
        return type(value) is float
    if name in ("leg_depth", "verification_stale_days"):
        return type(value) is int
    return name in ("require_write_confirmation", "write_enabled") and type(value) is bool


def config_from(stored: dict[str, Any], changes: dict[str, Any]) -> StoreConfig:
    """Settings from stored JSON with changes on top; a bad value is a one-line InvalidInput."""
    from pydantic import ValidationError

    from kenning.store.models import StoreConfig

    from .requests import invalid

    try:
        return StoreConfig.model_validate({**StoreConfig.model_validate(stored).model_dump(), **changes})
    except ValidationError as exc:
        raise invalid(exc) from exc
