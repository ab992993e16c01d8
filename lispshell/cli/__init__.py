"""lispshell's entry points: the `lispshell` command (main.py) and each subcommand."""
