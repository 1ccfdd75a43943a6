"""The ``kenning`` executable and ``python -m kenning``: ``--version`` answers before anything is
imported; every other invocation goes to the command line in cli.py."""

import sys


def main() -> None:
    if sys.argv[1:] in (["--version"], ["-V"]):
        from kenning import __version__

        print(f"kenning {__version__}")
        return
    from kenning.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
