"""A server that never answers: it reads its stdin and says nothing, until stdin closes.

Arguments, both optional: a marker (unused here; tests find the process by it) and a file to create when
the first message (the client's handshake) arrives."""
import sys

for _line in sys.stdin:
    if len(sys.argv) > 2:
        open(sys.argv[2], "a").close()
