"""A server that never answers: it reads its stdin and says nothing, until stdin closes."""
import sys

for _line in sys.stdin:
    pass
