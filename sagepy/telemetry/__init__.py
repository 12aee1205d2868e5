"""OpenTelemetry export of a run's spans (SPEC §18.1): `config` decides whether and where (without the SDK),
`spans` makes and sends them (with it), `secrets` names what they never hold."""
