"""A fuzz harness for sagepy (issue 18): grammar-aware generation and corpus mutation, run in-process
through the public pipeline, reporting internal errors, crashes and slow inputs. Long run:
`python -m tests.fuzz --count 100000 --seed 1` (see `python -m tests.fuzz --help`)."""
