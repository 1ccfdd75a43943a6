"""The command line's sub-command groups and shared output helpers; cli.py mounts them."""
