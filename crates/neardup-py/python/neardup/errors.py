"""The exceptions neardup raises on purpose, one tree under :class:`neardup.Error`.

Each is also the built-in exception it was before the tree existed (``ValueError``,
``TypeError`` or ``OSError``), so ``except ValueError`` still catches what it caught::

    Error
    ├── InputError (ValueError)          a value neardup cannot take: a document, an id, a count
    │   └── OptionError                  an option, a pipeline spec, contradicting search settings
    │       └── UnknownOptionError (TypeError)  a keyword no function of neardup takes, with the
    │                                        ones it takes and the likeliest meant
    ├── InputTypeError (TypeError)       a value of the wrong type
    ├── IndexFileError (ValueError)      a saved index that cannot be used: corrupt, too old,
    │   └── PipelineMismatchError        or made by another pipeline or settings
    └── FileError (OSError)              a file that cannot be read or written

Errors inside neardup itself (a bug) are ``RuntimeError``, and the datasketch drop-in
(:mod:`neardup.datasketch`) raises what datasketch raises. One warning: ``RepeatedIdWarning``
(a ``UserWarning``), when the records of a batch run repeat ids.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Error",
    "InputError",
    "OptionError",
    "UnknownOptionError",
    "InputTypeError",
    "IndexFileError",
    "PipelineMismatchError",
    "FileError",
    "RepeatedIdWarning",
]


class Error(Exception):
    """Every error neardup raises on purpose."""


class InputError(Error, ValueError):
    """A value neardup cannot take: a document, an id, a count."""


class OptionError(InputError):
    """An option, a pipeline spec, or search settings that contradict each other."""


class UnknownOptionError(OptionError, TypeError):
    """A keyword argument the function does not take (a ``TypeError``, as Python's own)."""


def check_keywords(function: str, given: Any, takes: Any) -> None:
    """Raises :class:`UnknownOptionError` for the first of ``given`` not in ``takes``, naming
    the closest one it takes and all of them."""
    import difflib

    takes = list(takes)
    for name in given:
        if name not in takes:
            close = difflib.get_close_matches(name, takes, 1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UnknownOptionError(
                f"{function}() takes no option {name!r}{hint}; it takes {', '.join(takes)}"
            )


class InputTypeError(Error, TypeError):
    """A value of the wrong type."""


class IndexFileError(Error, ValueError):
    """A saved index that cannot be used: corrupt, of a format too old, or not this job's."""


class PipelineMismatchError(IndexFileError):
    """A saved index made with another pipeline or other settings than the ones asked for."""


class FileError(Error, OSError):
    """A file that cannot be read or written."""


class RepeatedIdWarning(UserWarning):
    """A batch run's records repeat ids (``"7"`` and ``7`` are one id): they stay separate
    documents, as ``neardup dedup`` keeps them, and the run's summary counts them
    (``repeated_ids``, ``repeated_id_examples``)."""
