"""One served call as a run of its own on the engine (SPEC §20, §21): the agent is the run's entry, its fields
the call's arguments, and the run's Host sends its output to the calling client and takes its cancel event
from the request. A durable run (`[persistence]`) keeps its id for the result's `_meta`; a paused one is
answered with its `paused: …` lines."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .live import CallPorts, Outcome

if TYPE_CHECKING:
    from ..check.served import ServedAgent
    from ..engine import Program


class EngineRunner:
    """Runs calls of one compiled program; any number at once, each on its own thread."""

    def __init__(self, program: Program, shared_mcp: Any = None, client_model: bool = False) -> None:
        self.program = program
        self.client_model = client_model   # `[serve] model = "client"`: divine asks the calling client
        self.shared_mcp = shared_mcp   # the connections calls share ([tools.X] shared = true), or None

    def __call__(self, served: ServedAgent, values: dict, ports: CallPorts) -> Outcome:
        from ..engine import Host
        from .people import ClientPeople
        from .sampling import ClientSampling
        paused: list[str] = []

        def err(line: str) -> None:
            if line.startswith("paused: "):
                paused.append(line)
            ports.err(line)

        host = Host(out=ports.out, err=err, cancel=ports.cancel, telemetry=False, people=ClientPeople(ports),
                    mcp=self.shared_mcp, model=ClientSampling(ports) if self.client_model else None)
        try:
            outcome = self.program.run(entry=served.agent.name, args=values, host=host)
        except ValueError as exc:   # the engine refused the entry or its fields: the catalogue's own mistake
            return Outcome("failed", error=f"internal error: {exc}")
        error = outcome.error
        if outcome.status == "paused":
            error = "\n".join(paused) or "paused: the run waits for a person"
        return Outcome(outcome.status, outcome.value, error, outcome.run_id)
