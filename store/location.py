"""Where a store lives: an explicit path or postgresql:// URL, else $KENNING_URL, else $KENNING_HOME, else
./.kenning/ if present, else the user data dir."""

from __future__ import annotations

import os
import re
from pathlib import Path

from kenning.retrieval.env_folder import env_folder

LOCAL_DIRNAME = ".kenning"


URL_PREFIXES = ("postgresql://", "postgres://")
SUPPORTED = "a store folder path, or a postgresql://user:pass@host/db URL"
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")  # two letters at least: never a drive letter


def refuse_other_schemes(text: str, what: str) -> None:
    """InvalidInput when ``text`` is a URL of another kind (mysql://, sqlite:///...): such a location
    must not silently become a local folder named after it. Only the scheme is repeated (no password)."""
    found = _SCHEME.match(text.strip())
    if found and not text.strip().startswith(URL_PREFIXES):
        from kenning.errors import InvalidInput

        raise InvalidInput(f"{what} is a {found.group(1)}:// URL, which kenning cannot use; give {SUPPORTED}")


def current_folder() -> Path:
    """The process's current folder. One deleted or moved under the process (a removed worktree) is a
    KenningError saying so: os.getcwd()'s bare FileNotFoundError, naming no file, reached every
    search, write and list."""
    try:
        return Path.cwd()
    except FileNotFoundError:
        from kenning.errors import KenningError

        raise KenningError("the current folder no longer exists (it was deleted or moved while in use); "
                           "run kenning from a folder that exists") from None


def transfer_location(location: str | os.PathLike, role: str) -> Path | str:
    """The folder or URL ``kenning migrate``'s source or destination (``role``) names, refused as
    ``--store`` is when it is empty, a URL of another kind, or a file."""
    what = f"the migrate {role}"
    return _explicit(location, what, f"{what} is empty; give {SUPPORTED}", what)[0]


def locate_store(explicit: str | os.PathLike | None = None) -> tuple[Path | str, str]:
    """The store directory (or server URL) and why it was chosen (so a front end can say which store it uses).

    An explicit empty path (``--store ""``, ``open_store("")``) is a mistake, not a request for the
    default; an empty $KENNING_URL / $KENNING_HOME (a blank one too) reads as unset, as shells treat an empty variable.
    A path that is a file (or lies under one) is refused here, so every command says so alike."""
    if explicit is not None:
        return _explicit(explicit, "the store location (--store)",
                         "the store path (--store) is empty; give a store folder or a postgresql:// URL, "
                         "or leave --store out for the default store", "given with --store")
    url = os.environ.get("KENNING_URL", "").strip()  # blank is unset, as for the folder variables (env_folder)
    if url:
        if not url.startswith(URL_PREFIXES):
            from kenning.errors import InvalidInput

            raise InvalidInput(f"$KENNING_URL must be a postgresql:// URL, not {url.split(':')[0]!r}")
        return url, "set by $KENNING_URL"
    env = env_folder("KENNING_HOME")
    if env is not None:
        refuse_other_schemes(os.environ["KENNING_HOME"],
                             "$KENNING_HOME (a folder; a postgresql:// URL goes in $KENNING_URL)")
        return _folder(env, "set by $KENNING_HOME")
    local = current_folder() / LOCAL_DIRNAME
    if local.is_dir():
        return local, f"found {LOCAL_DIRNAME}/ in the current directory"
    import platformdirs  # only this branch needs it

    default = Path(platformdirs.user_data_dir("kenning", appauthor=False))
    return _folder(default, "the default (no --store, no $KENNING_HOME, no ./.kenning)")


def _explicit(location: object, what: str, empty: str, why: str) -> tuple[Path | str, str]:
    """A location given outright: a postgresql:// URL as it is, else a folder path (``_folder``);
    InvalidInput when it is neither text nor a path, empty (``empty`` says so), a URL of another kind
    or a file."""
    if not isinstance(location, (str, os.PathLike)):
        from kenning.errors import InvalidInput

        raise InvalidInput(f"{what} must be a folder path or a postgresql:// URL, got {type(location).__name__}")
    if isinstance(location, str):
        if not location.strip():
            from kenning.errors import InvalidInput

            raise InvalidInput(empty)
        if location.startswith(URL_PREFIXES):
            return location, why
        refuse_other_schemes(location, what)
    return _folder(Path(location).expanduser(), why)


def _folder(path: Path, why: str) -> tuple[Path, str]:
    """``path`` made absolute, and ``why``, unless it (or the nearest of its parents that exists) is not a
    folder: such a path can neither hold a store nor become one. Absolute, because a relative one
    ($KENNING_HOME=rel) was read against whatever folder the process was in at each use: after a
    chdir the vector index was saved to a new 'rel' folder there, and `kenning info` showed 'rel'."""
    path = path if path.is_absolute() else current_folder() / path
    if "\x00" in str(path):  # no file system holds one: os.stat's "embedded null byte" ValueError said so
        from kenning.errors import InvalidInput

        raise InvalidInput(f"the store path {str(path)!r} holds a NUL character, which no folder name can ({why})")
    probe = path
    try:
        while not probe.exists():  # one stat call when the store is there
            if probe.parent == probe:
                return path, why
            probe = probe.parent
        if probe.is_dir():
            return path, why
        what = "a file" if probe.is_file() else "not a folder"
    except OSError:  # a folder it may not look into: opening the store says what is wrong
        return path, why
    from kenning.errors import InvalidInput

    if probe == path:
        problem = f"the store path {path} is {what}, not a store folder"
    else:
        problem = f"the store path {path} cannot be a store folder: {probe} is {what}"
    raise InvalidInput(f"{problem} ({why}); give a folder, or a new path for a new store")


def resolve_store_dir(explicit: str | os.PathLike | None = None) -> Path | str:
    return locate_store(explicit)[0]
