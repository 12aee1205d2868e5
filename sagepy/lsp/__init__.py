"""The language server (SPEC §19.2): `workspace` (documents, projects, analyses), `features` (the requests,
answered from the checker's name index), `describe` (signatures and docs as shown), `server` (pygls, the only
module that imports it)."""
