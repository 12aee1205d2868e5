"""`sage trace view`: the HTML timeline of a trace file (SPEC §18.2). `model` reads the events into lanes,
bars and marks; `render` writes the self-contained page."""
