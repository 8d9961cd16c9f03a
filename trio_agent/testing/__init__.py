"""Test kits shipped with trio_agent for ports and for our own tests."""
