"""User-facing errors: each carries one clear line and the exit code the CLI maps it to."""


class InfinipotError(Exception):
    """An error the CLI prints as one line (no traceback). Exit code 1 unless a subclass says otherwise."""

    exit_code = 1


class UsageError(InfinipotError):
    """Bad flags or arguments (exit 2)."""

    exit_code = 2


class InputError(InfinipotError):
    """Unreadable input: a corrupt, encrypted, empty or binary document, a bad pot file (exit 2)."""

    exit_code = 2


class ModelError(InfinipotError):
    """The model could not be found or loaded (exit 1)."""

    exit_code = 1
