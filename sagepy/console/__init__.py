"""The web console, `sage ui` (SPEC §24): the project's durable runs, the people they wait on, operations on
them, and eval reports, in a browser.

`server.py` checks the host, makes the token and serves `app.py`'s Starlette application with uvicorn;
`app.py` holds the routes, the token and CSRF checks and the live updates (server-sent events); `views.py`
reads what each page shows from the store (through the run service, sagepy/runs/service.py, which also makes
every change); `evals.py` reads the eval reports of `.sage/evals/`. Pages are Jinja2 templates with autoescape
(`templates/`); the stylesheet and the one small script of `static/` ship in the wheel, and nothing is loaded
from anywhere else. Imported only by `sage ui`.
"""
