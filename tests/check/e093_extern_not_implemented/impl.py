"""Implements `whisper` but not `shout`."""


def whisper(s):
    return s.lower()
