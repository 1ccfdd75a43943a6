"""The ``kenning`` executable and ``python -m kenning``: ``--version`` answers before anything is
imported; a plain ``search`` runs without typer (commands/search.py, ``run_fast``); every other
invocation goes to the command line in cli.py."""

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from kenning import __version__

        print(f"kenning {__version__}")
        return
    if "search" in sys.argv[1:]:
        from kenning.commands import support
        from kenning.commands.search import run_fast
        from kenning.memory import notices

        notices.listen(support.note)  # as cli.main does: an index rebuilt at open is said on stderr

        code = run_fast(sys.argv[1:])
        if code is not None:
            sys.exit(code)
    from kenning.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
