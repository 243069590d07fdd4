"""Model adapter: litellm bridge, usage accounting, test server, offline model."""
