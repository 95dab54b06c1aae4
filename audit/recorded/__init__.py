"""Recorded decisions of a deployed system (rankings it already made), imported into the result store."""
