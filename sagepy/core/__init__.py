"""The bottom of sagepy: Sage values (values.py), the errors they raise and their kinds (errors.py), Sage types
(types.py), the Sage<->JSON conversion of SPEC §5 (convert.py) and JSON text (json_text.py). Every other package
may use it; it imports nothing else of sagepy (tests/test_architecture.py)."""
