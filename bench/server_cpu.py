"""The CPU a PostgreSQL server started by a bench has used (its own processes only)."""

from __future__ import annotations

from pathlib import Path


class ServerCpu:
    """CPU seconds of one PostgreSQL server started here: its postmaster, the backends and parallel
    workers it has reaped and those still running (another server on the machine not counted)."""

    def __init__(self, pgdata: Path | None):
        self.pid = int((pgdata / "postmaster.pid").read_text().split()[0]) if pgdata is not None else None

    def __call__(self) -> float:
        if self.pid is None:
            return 0.0
        import psutil

        try:
            postmaster = psutil.Process(self.pid)
            t = postmaster.cpu_times()
            total = t.user + t.system + t.children_user + t.children_system
            for child in postmaster.children():
                try:
                    c = child.cpu_times()
                    total += c.user + c.system
                except psutil.Error:
                    pass
            return total
        except psutil.Error:
            return float("nan")
