"""The one refusal format of the front ends that run a user's file under tilesim (tilesim.pypto,
tilesim.triton and the torch stand-in they share): ``FILE:LINE: CALL: WHAT; INSTEAD``, naming the
line of the user's code that made the call, the construct, and what is supported instead."""
import os
import sys

PACKAGE = os.path.dirname(os.path.abspath(__file__))  # .../tilesim


def caller():
    """(file, line) of the user's code making the current call: the first frame outside the
    tilesim package."""
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(PACKAGE + os.sep):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("<unknown>", 0)


def message(call, what, instead=None, where=None):
    """The refusal line: where (default: the caller), the call, what is wrong, what instead."""
    file, line = where or caller()
    text = f"{file}:{line}: {call}: {what}"
    return text + (f"; {instead}" if instead else "")


class Refusal(ValueError):
    """A call a front end does not take: ``.call``, ``.file``, ``.line`` and the one-line
    message (see ``message``)."""

    def __init__(self, call, what, instead=None, where=None):
        self.file, self.line = where or caller()
        self.call, self.what = call, what
        super().__init__(message(call, what, instead, (self.file, self.line)))
