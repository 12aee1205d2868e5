"""A server that fails at start-up: it writes to stderr and exits with status 3 before speaking MCP."""
import sys

sys.stderr.write("exits: cannot open the database\n")
sys.stderr.write("exits: giving up\n")
sys.stderr.flush()
sys.exit(3)
