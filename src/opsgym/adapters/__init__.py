"""Adapters: how an agent meets an episode (Gymnasium, tool-calling JSON, server, MCP)."""
