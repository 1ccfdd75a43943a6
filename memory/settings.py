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
        (``check_changes``: out of range, an unknown model) raise InvalidInput and change nothing. A
        partial ``weights`` table is merged into the current one."""
        from kenning.store.models import StoreConfig

        unknown = sorted(set(changes) - set(StoreConfig.model_fields))
        if unknown:
            raise InvalidInput(f"unknown setting {unknown[0]!r}; settings are: {', '.join(StoreConfig.model_fields)}")
        check_changes(changes)
        if not persist:
            changes = merged_weights(changes, self.current().weights)
            config_from({**self.current().model_dump(), **changes}, {})  # validate before keeping any
            self._local.update(changes)
            self._config = config_from(json.loads(self._raw), self._local)
            return self._config
        with self.db.transaction() as c:
            row = c.execute("SELECT value FROM meta WHERE key = 'config'").fetchone()
            before = json.loads(row[0]) if row else {}
            changes = merged_weights(changes, config_from(before, {}).weights)
            stored = config_from(before, changes)
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


# What a numeric setting accepts, checked when it is set (``change``), never when a store is read: a
# value stored before these checks existed still opens the store, and setting it again fixes it.
# name -> (lowest, lowest allowed itself, highest or None, highest allowed itself, whole number, wording)
_RANGES: dict[str, tuple[float, bool, float | None, bool, bool, str]] = {
    "bm25_k1": (0.0, False, 10.0, True, False, "a number above 0, at most 10"),
    "bm25_b": (0.0, True, 1.0, True, False, "a number from 0 to 1"),
    "rrf_k": (0.0, False, None, False, False, "a number above 0"),
    # each leg ranks this many before fusing: beyond 100,000 it is a scan of any store this serves
    "leg_depth": (1, True, 100_000, True, True, "a whole number from 1 to 100,000"),
    "evidence_alpha": (0.0, True, 1.0, True, False, "a number from 0 to 1"),
    "evidence_cos_floor": (-1.0, True, 1.0, False, False, "a cosine from -1 up to (not including) 1"),
    "evidence_power": (0.0, False, None, False, False, "a number above 0"),
    # a cosine: vector hits below it are dropped; null means the model's measured floor
    "vector_floor": (-1.0, True, 1.0, True, False, "a cosine from -1 to 1, or null for the model's own floor"),
    "verification_stale_days": (1, True, 36_500, True, True, "a whole number of days from 1 to 36,500 (a century)"),
}
LEGS: tuple[str, ...] = ("keyword", "bm25", "vector")


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _refuse(name: str, value: Any, accepted: str) -> InvalidInput:
    default = CONFIG_DEFAULTS.get(name)
    told = f" (default {_shown(default)})" if default is not None and name != "weights" else ""
    return InvalidInput(f"{name} {_shown(value)} is not accepted: {name} takes {accepted}{told}")


def _number(value: Any) -> float | None:
    """The value as a finite number (text that spells one too, as pydantic reads it), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        return None
    return float(value)


def check_changes(changes: dict[str, Any]) -> None:
    """Refuse a value the search cannot use (out of range, an unknown leg or model), naming the
    setting, the value and what it accepts; the other checks (types, modes) are StoreConfig's."""
    for name, value in changes.items():
        if name in _RANGES:
            low, low_in, high, high_in, whole, accepted = _RANGES[name]
            if value is None and name == "vector_floor":
                continue
            number = _number(value)
            if (number is None or (whole and not number.is_integer())
                    or number < low or (number == low and not low_in)
                    or (high is not None and (number > high or (number == high and not high_in)))):
                raise _refuse(name, value, accepted)
        elif name == "weights":
            _check_weights(value)
        elif name == "model":
            _check_model(value)


def _check_weights(value: Any) -> None:
    table = "a table of leg weights, e.g. {\"keyword\": 0.5}; the legs are " + ", ".join(LEGS)
    if not isinstance(value, dict) or not value:
        raise _refuse("weights", value, table)
    for leg, weight in value.items():
        if leg not in LEGS:
            raise InvalidInput(f"weights: unknown leg {_shown(leg)}; the legs are {', '.join(LEGS)}")
        number = _number(weight)
        if number is None or number < 0 or isinstance(weight, str):
            raise InvalidInput(f"weights: {leg} {_shown(weight)} is not accepted: a leg's weight is a number, 0 or more")


def merged_weights(changes: dict[str, Any], current: dict[str, float]) -> dict[str, Any]:
    """``changes`` with a partial weights table merged into ``current`` (the legs not named keep
    their weight); every leg at 0 is refused, as it would leave hybrid ranking nothing to go on."""
    if "weights" not in changes:
        return changes
    weights = {**current, **changes["weights"]}
    if not any(float(w) > 0 for w in weights.values()):
        raise InvalidInput(f"weights {_shown(weights)} is not accepted: at least one leg needs a weight above 0")
    return {**changes, "weights": weights}


def _check_model(value: Any) -> None:
    """A model name resolve_model knows: the packaged default (by either name) or a folder in the
    models directory. Nothing is loaded or hashed here."""
    if value is None:
        return
    from kenning.retrieval import embeddings

    default = embeddings.DEFAULT_MODEL
    directory = embeddings.default_models_dir()
    if isinstance(value, str) and value.strip() == value and value:
        if value in (default, f"sentence-transformers/{default}") or (directory / value).is_dir():
            return
    local = sorted(child.name for child in directory.iterdir()
                   if child.is_dir() and ((child / "modules.json").is_file() or (child / "config.json").is_file())) \
        if directory.is_dir() else []
    known = ", ".join([f"{default} (the default)"] + [n for n in local if n != default])
    raise InvalidInput(f"model {_shown(value)} is not a model kenning knows; the known models are: {known}; "
                       f"a local model is a folder in {directory}; set model to null to go back to the default")
