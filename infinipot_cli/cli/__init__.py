"""The command line: the commands (commands.py), `chat`, the live display, `inspect`'s report and the options the
reading commands and `bench` share. It drives a read through session.py and writes what it gives back."""
