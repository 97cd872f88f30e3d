"""The verifying client, its pins and its tools (projector/remote/), through the CLI and real transports."""
